import type { ExecOptions, Sandbox } from '../../src/sandbox/sandbox.js';
import type { ExecResult } from '../../src/types.js';

/** An in-memory Sandbox for loop tests: records commands and answers from a handler. */
export class FakeSandbox implements Sandbox {
  readonly commands: { command: string; timeoutSeconds: number }[] = [];
  running = 0;
  maxRunning = 0;

  constructor(
    private readonly handler: (command: string) => Partial<ExecResult> & { delayMs?: number } = () => ({}),
  ) {}

  async exec(command: string, options: ExecOptions): Promise<ExecResult> {
    this.commands.push({ command, timeoutSeconds: options.timeoutSeconds });
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      const { delayMs, ...partial } = this.handler(command);
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      return {
        command,
        exitCode: 0,
        stdout: `ran: ${command}\n`,
        stderr: '',
        timedOut: false,
        oomKilled: false,
        aborted: false,
        truncated: false,
        durationMs: 5,
        containerId: `fake-${this.commands.length}`,
        timeoutSeconds: options.timeoutSeconds,
        ...partial,
      };
    } finally {
      this.running--;
    }
  }

  async close(): Promise<void> {}
  async [Symbol.asyncDispose](): Promise<void> {}
}
