import type { ExecResult } from '../types.js';

export interface ExecOptions {
  /** Kill the command after this many seconds; the result then has timedOut set. */
  timeoutSeconds: number;
  /** Abort kills the command; the result then has aborted set. */
  signal?: AbortSignal;
}

/**
 * Where commands run. `exec` resolves with every outcome of the command as
 * data (exit code, timeout, OOM, truncation) and rejects only when the sandbox
 * itself failed, e.g. the container could not be created.
 */
export interface Sandbox {
  exec(command: string, options: ExecOptions): Promise<ExecResult>;
  /** Remove everything this sandbox created. Safe to call twice. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
