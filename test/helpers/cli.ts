import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  input?: string;
  /** Replace the environment entirely instead of extending process.env. */
  cleanEnv?: boolean;
  onSpawn?: (child: ReturnType<typeof spawn>) => void;
  /** Prefix command, e.g. setpriv to run as another user. */
  prefix?: string[];
}

/** Run the built CLI as a user would, and collect its output. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliRun> {
  const base = options.cleanEnv ? { PATH: process.env.PATH } : process.env;
  const env: Record<string, string | undefined> = { ...base, ...options.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const argv = [...(options.prefix ?? []), process.execPath, CLI, ...args];
  const child = spawn(argv[0]!, argv.slice(1), { env: env as NodeJS.ProcessEnv, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  options.onSpawn?.(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.end(options.input ?? '');
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

/**
 * Run the CLI with `--output-format stream-json` among `args`, and send
 * `signal` `delayMs` after the first `tool_start` whose command matches.
 * Returns the run, its run id (from the init event) and when the signal went.
 */
export async function runAndSignal(
  args: string[],
  options: CliOptions & { signal: NodeJS.Signals; delayMs?: number; command?: string },
): Promise<CliRun & { runId: string; signalledAt: number }> {
  let runId = '';
  let signalledAt = 0;
  const run = await runCli(args, {
    ...options,
    onSpawn: (child) => {
      let sent = false;
      child.stdout!.on('data', (d: Buffer) => {
        for (const line of d.toString().split('\n').filter(Boolean)) {
          const event = JSON.parse(line) as { type: string; run_id?: string; command?: string };
          if (event.type === 'system') runId = event.run_id!;
          if (event.type === 'tool_start' && !sent && (!options.command || event.command === options.command)) {
            sent = true;
            setTimeout(() => {
              signalledAt = Date.now();
              child.kill(options.signal);
            }, options.delayMs ?? 300);
          }
        }
      });
    },
  });
  return { ...run, runId, signalledAt };
}
