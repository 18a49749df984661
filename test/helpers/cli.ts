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
