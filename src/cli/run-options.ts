import type { Argv } from 'yargs';
import type { RunOptions } from '../options.js';

/** The flags of `run`: the agent flags plus the task dir, workspace and output flags. */
export function withRunFlags<T>(y: Argv<T>) {
  return withAgentFlags(y.option('task-dir', { type: 'string', describe: 'The task directory, which becomes /workspace (see --mount)', defaultDescription: 'current directory' }))
    .option('mount', { choices: ['rw', 'ro', 'copy'] as const, describe: 'How the task dir reaches /workspace: rw bind, ro bind, or copy into a volume (the host dir is never touched)', defaultDescription: 'rw' })
    .option('out', { type: 'string', describe: 'copy: where the result goes (workspace/, changes.patch, changes.json)', defaultDescription: 'sandloop-results/<run id>' })
    .option('apply', { type: 'boolean', default: false, describe: 'copy: apply the changes to the task dir after the run (refused if it changed meanwhile)' })
    .option('transcript', { type: 'string', describe: 'Write every event as JSONL to FILE' })
    .option('output-format', { choices: ['text', 'json', 'stream-json'] as const, default: 'text' as const, describe: 'text: progress on stderr, answer on stdout; json: one result object; stream-json: one event per line' })
    .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'No progress on stderr' });
}

/**
 * The flags shared by `run` and `batch` (where they are defaults for every
 * case). Numeric flags have no yargs type, so that validation can quote
 * exactly what was given ("got 'abc'", not "got NaN").
 */
export function withAgentFlags<T>(y: Argv<T>) {
  return y
    .option('model', { type: 'string', describe: 'Model id, or scripted:FILE to play pre-written turns (batch: scripted:DIR plays DIR/<case>.json)', defaultDescription: 'MODEL_ID, then claude-sonnet-4-5' })
    .option('max-turns', { requiresArg: true, describe: 'Most model calls in one run', defaultDescription: '50' })
    .option('max-tokens', { requiresArg: true, describe: 'max_tokens of each model call', defaultDescription: '8192' })
    .option('timeout', { requiresArg: true, describe: 'Seconds before a bash call is killed (also caps the model\'s own timeout)', defaultDescription: '120' })
    .option('max-output', { requiresArg: true, describe: 'Characters of stdout+stderr the model sees per call (head and tail kept)', defaultDescription: '30000' })
    .option('network', { type: 'string', describe: 'Container network: none or bridge', defaultDescription: 'none' })
    .option('memory', { type: 'string', describe: 'Memory limit per container, no swap', defaultDescription: '1g' })
    .option('cpus', { requiresArg: true, describe: 'CPU limit per container', defaultDescription: '1' })
    .option('pids', { requiresArg: true, describe: 'Process limit per container', defaultDescription: '256' })
    .option('env', { type: 'string', array: true, describe: 'KEY=VALUE to set in the container (repeatable); nothing else enters' })
    .option('image', { type: 'string', describe: 'Sandbox image', defaultDescription: 'sandloop-sandbox:latest' })
    .option('system', { type: 'string', describe: 'Replace the system prompt' })
    .option('append-system', { type: 'string', describe: 'Append to the system prompt' })
    .option('parallel', { requiresArg: true, describe: 'Most bash calls of one turn run at once', defaultDescription: '4' })
    .option('max-retries', { requiresArg: true, describe: 'Retries of a failed model call (429, 5xx, 529, dropped streams)', defaultDescription: '6' })
    .option('runtime', { type: 'string', describe: 'OCI runtime for the containers, e.g. runsc (gVisor); turns the warm pool off', defaultDescription: "the daemon's default" })
    .option('workspace-max', { type: 'string', describe: 'Largest file a command may write (RLIMIT_FSIZE)', defaultDescription: '1g' })
    .option('allow-dangerous-mount', { type: 'boolean', default: false, describe: 'Mount the task dir even if it is /, your home, a system directory, or holds a Docker socket' })
    .option('docker-timeout', { requiresArg: true, describe: 'Seconds each Docker API request may take before it is an error', defaultDescription: '30' })
    .option('exclude', { type: 'string', array: true, describe: 'copy: a gitignore-style pattern to leave out of the copy (repeatable)' })
    .option('no-gitignore', { type: 'boolean', default: false, describe: 'copy: copy .gitignored paths too' })
    .option('record', { type: 'string', describe: 'Record every model exchange to a cassette (a .jsonl file; in batch, a directory: one per case)' })
    .option('replay', { type: 'string', describe: 'Serve the model from a cassette (file; in batch, a directory): no network, no API key' })
    .option('replay-mode', { choices: ['strict', 'lenient'] as const, describe: 'strict: a request that differs from the recording fails (replay_mismatch); lenient: warn and go on', defaultDescription: 'strict' })
    .option('no-warm', { type: 'boolean', default: false, describe: 'Do not start containers ahead of time: each call creates its own (slower)' })
    .option('verbose', { alias: 'v', type: 'boolean', default: false, describe: 'Log every Docker and API step to stderr' });
}

export interface RunFlags {
  taskDir?: string;
  model?: string;
  maxTurns?: string | number;
  maxTokens?: string | number;
  timeout?: string | number;
  maxOutput?: string | number;
  network?: string;
  memory?: string;
  cpus?: string | number;
  pids?: string | number;
  env?: string[];
  image?: string;
  system?: string;
  appendSystem?: string;
  parallel?: string | number;
  maxRetries?: string | number;
  transcript?: string;
  noWarm?: boolean;
  runtime?: string;
  workspaceMax?: string;
  allowDangerousMount?: boolean;
  dockerTimeout?: string | number;
  mount?: string;
  exclude?: string[];
  noGitignore?: boolean;
  out?: string;
  apply?: boolean;
  record?: string;
  replay?: string;
  replayMode?: string;
}

export function runOptionsFrom(flags: RunFlags): RunOptions {
  return {
    taskDir: flags.taskDir,
    model: flags.model,
    maxTurns: flags.maxTurns,
    maxTokens: flags.maxTokens,
    timeout: flags.timeout,
    maxOutput: flags.maxOutput,
    network: flags.network,
    memory: flags.memory,
    cpus: flags.cpus,
    pids: flags.pids,
    env: flags.env,
    image: flags.image,
    system: flags.system,
    appendSystem: flags.appendSystem,
    parallel: flags.parallel,
    maxRetries: flags.maxRetries,
    transcript: flags.transcript,
    warm: !flags.noWarm,
    runtime: flags.runtime,
    workspaceMax: flags.workspaceMax,
    allowDangerousMount: flags.allowDangerousMount,
    dockerTimeout: flags.dockerTimeout,
    mount: flags.mount,
    exclude: flags.exclude,
    gitignore: !flags.noGitignore,
    out: flags.out,
    apply: flags.apply,
    record: flags.record,
    replay: flags.replay,
    replayMode: flags.replayMode,
  };
}
