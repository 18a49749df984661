import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type Docker from 'dockerode';
import { ConfigError } from './errors.js';
import type { Model } from './model/model.js';
import type { RateGate } from './model/rate-gate.js';
import type { RunEvent } from './types.js';
import { dangerousMountReason } from './workspace/dangerous-dirs.js';

export const DEFAULT_MODEL = 'claude-sonnet-4-5';

/** Everything `runAgent` and the CLI accept. Each field's default is stated where it is defined. */
export interface RunOptions {
  /** The directory mounted at /workspace. Default: the current directory. */
  taskDir?: string;
  /** A model id, `scripted:FILE`, or a Model object. Default: MODEL_ID, then DEFAULT_MODEL. */
  model?: string | Model;
  /** Default: ANTHROPIC_API_KEY. Required for a real model; never enters a container. */
  apiKey?: string;
  /** Default: ANTHROPIC_BASE_URL, then the SDK's default. */
  baseURL?: string;
  /** Most model calls per episode. Default 50. */
  maxTurns?: number | string;
  /** `max_tokens` per model call. Default 8192. */
  maxTokens?: number | string;
  /** Per bash call timeout and the cap on the model's own `timeout`, in seconds. Default 120. */
  timeout?: number | string;
  /** Characters of command output the model sees per call. Default 30000. */
  maxOutput?: number | string;
  /** Docker network: `none` (default), `bridge` or a user-defined network. */
  network?: string;
  /** Memory limit, e.g. `1g`, `512m`. Swap is disabled. Default `1g`. */
  memory?: string | number;
  /** CPU limit. Default 1. */
  cpus?: number | string;
  /** Process limit. Default 256. */
  pids?: number | string;
  /** `KEY=VALUE` pairs: the only variables that enter the container. */
  env?: string[] | Record<string, string>;
  /** Sandbox image. Default `sandloop-sandbox:latest` (built when missing). */
  image?: string;
  /** Replaces the system prompt. */
  system?: string;
  /** Appended to the system prompt. */
  appendSystem?: string;
  /** Most bash calls of one turn that run at once. Default 4. */
  parallel?: number | string;
  /** Retries of a failed model call. Default 6. */
  maxRetries?: number | string;
  /** Start each call's container ahead of time (the warm pool). Default true; always off under runsc. */
  warm?: boolean;
  /** OCI runtime, e.g. `runsc` (gVisor). Default: the daemon's. */
  runtime?: string;
  /** Largest file a command may write (RLIMIT_FSIZE), e.g. `1g`. Default `1g`. */
  workspaceMax?: string | number;
  /** Mount a task dir even when it is `/`, the home directory, a system directory, or holds a Docker socket. */
  allowDangerousMount?: boolean;
  /** Deadline of each Docker API request, in seconds. Default 30. */
  dockerTimeout?: number | string;
  /** How the task dir reaches /workspace: `rw` bind (default), `ro` bind, or `copy` into a volume of the run's own. */
  mount?: string;
  /** `copy`: gitignore-style patterns left out of the copy. */
  exclude?: string[];
  /** `copy`: honour .gitignore files. Default true. */
  gitignore?: boolean;
  /** `copy`: where the result goes (workspace/, changes.patch, changes.json). Default `sandloop-results/<run id>`. */
  out?: string;
  /** `copy`: apply the changes to the task dir after the run (refused if the task dir changed meanwhile). */
  apply?: boolean;
  /** Write every event as JSONL to this file, as the run goes. */
  transcript?: string;
  /** Cancels the run: running containers are killed and the status is `aborted`. */
  signal?: AbortSignal;
  /** Called with every event as it happens. */
  onEvent?: (event: RunEvent) => void;
  /** Image build and other progress lines. */
  onProgress?: (line: string) => void;
  /** Inject a Docker client instead of discovering one. */
  docker?: Docker;
  /** Where MODEL_ID, ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL are read. Default: process.env. */
  environment?: Record<string, string | undefined>;
  /** Use this run id instead of a fresh one. */
  runId?: string;
  /** Share API back-off with other episodes (a batch passes one gate to every case). */
  rateGate?: RateGate;
  /** Record every model exchange to a cassette: a `.jsonl` file, or a directory (then `run.jsonl` in it). */
  record?: string;
  /** Serve the model's turns from a cassette (file, or directory holding `run.jsonl`): no network, no API key. */
  replay?: string;
  /** `strict` (default): a request that differs from the recording fails with `replay_mismatch`. `lenient`: warn and go on. */
  replayMode?: string;
  /** Host files that must never reach a container even when they are in the task dir (the CLI passes the .env it read). */
  secretFiles?: string[];
}

/** Options after validation, with every default filled in. */
export interface ResolvedOptions {
  taskDir: string;
  model: string | Model;
  modelName: string;
  apiKey?: string;
  baseURL?: string;
  maxTurns: number;
  maxTokens: number;
  timeoutSeconds: number;
  maxOutput: number;
  network: string;
  memoryBytes: number;
  cpus: number;
  pids: number;
  env: string[];
  image: string;
  system?: string;
  appendSystem?: string;
  parallel: number;
  maxRetries: number;
  warm: boolean;
  runtime?: string;
  workspaceMaxBytes: number;
  dockerTimeoutMs: number;
  mount: MountMode;
  exclude: string[];
  gitignore: boolean;
  out?: string;
  apply: boolean;
  rateGate?: RateGate;
  /** Cassette file paths. */
  record?: string;
  replay?: string;
  replayMode: 'strict' | 'lenient';
}

export type MountMode = 'rw' | 'ro' | 'copy';

/** Validate at the edge, with messages that quote what was given. Throws ConfigError. */
export function resolveOptions(o: RunOptions, defaultImage: string): ResolvedOptions {
  const taskDir = safeTaskDir(existingDir(o.taskDir ?? process.cwd()), o.allowDangerousMount ?? false);
  const environment = o.environment ?? process.env;
  const model = o.model ?? nonEmpty(environment.MODEL_ID) ?? DEFAULT_MODEL;
  const modelName = typeof model === 'string' ? model : model.name;
  const apiKey = o.apiKey ?? nonEmpty(environment.ANTHROPIC_API_KEY);
  const cassettes = cassetteOptions(o);
  if (typeof model === 'string' && !model.startsWith('scripted:') && !cassettes.replay && !apiKey) {
    throw new ConfigError(
      `ANTHROPIC_API_KEY is not set: the model ${model} needs an API key (set it in the environment or in .env), or use --model scripted:FILE`,
    );
  }
  return {
    taskDir,
    model,
    modelName,
    apiKey,
    baseURL: o.baseURL ?? nonEmpty(environment.ANTHROPIC_BASE_URL),
    maxTurns: positiveInt(o.maxTurns, 50, '--max-turns'),
    maxTokens: positiveInt(o.maxTokens, 8192, '--max-tokens'),
    timeoutSeconds: atMost(positiveNumber(o.timeout, 120, '--timeout', ' of seconds'), MAX_TIMER_SECONDS, '--timeout'),
    maxOutput: positiveInt(o.maxOutput, 30_000, '--max-output'),
    network: network(o.network ?? 'none'),
    memoryBytes: parseSize(o.memory ?? '1g', '--memory', 6 * 1024 ** 2),
    cpus: positiveNumber(o.cpus, 1, '--cpus'),
    pids: positiveInt(o.pids, 256, '--pids'),
    env: envPairs(o.env ?? []),
    image: o.image ?? defaultImage,
    system: o.system,
    appendSystem: o.appendSystem,
    parallel: positiveInt(o.parallel, 4, '--parallel'),
    maxRetries: nonNegativeInt(o.maxRetries, 6, '--max-retries'),
    warm: (o.warm ?? true) && o.runtime !== 'runsc',
    runtime: o.runtime === undefined ? undefined : runtime(o.runtime),
    workspaceMaxBytes: parseSize(o.workspaceMax ?? '1g', '--workspace-max', 1024 ** 2),
    dockerTimeoutMs: atMost(positiveNumber(o.dockerTimeout, 30, '--docker-timeout', ' of seconds'), MAX_TIMER_SECONDS, '--docker-timeout') * 1000,
    ...copyOptions(o),
    rateGate: o.rateGate,
    ...cassettes,
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function existingDir(path: string): string {
  const abs = resolve(path);
  let isDir = false;
  try {
    isDir = statSync(abs).isDirectory();
  } catch {
    throw new ConfigError(`--task-dir ${abs} does not exist`);
  }
  if (!isDir) throw new ConfigError(`--task-dir ${abs} is not a directory`);
  return abs;
}

function quote(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}

function positiveNumber(value: unknown, fallback: number, flag: string, unit = ''): number {
  if (value === undefined) return fallback;
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) {
    throw new ConfigError(`${flag} must be a positive number${unit}, got ${quote(value)}`);
  }
  return n;
}

/** Node timers overflow past 2^31-1 ms (about 24.8 days) and then fire at once. */
const MAX_TIMER_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

function atMost(n: number, max: number, flag: string): number {
  if (n > max) throw new ConfigError(`${flag} must be at most ${max} seconds, got ${n}`);
  return n;
}

function positiveInt(value: unknown, fallback: number, flag: string): number {
  const n = positiveNumber(value, fallback, flag);
  if (!Number.isInteger(n)) throw new ConfigError(`${flag} must be a positive integer, got ${quote(value)}`);
  return n;
}

function nonNegativeInt(value: unknown, fallback: number, flag: string): number {
  if (value === 0 || value === '0') return 0;
  return positiveInt(value, fallback, flag);
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** `1g`, `512m`, `1.5g`, or bytes, at least `min` bytes. */
export function parseSize(value: string | number, flag: string, min: number): number {
  const m = /^(\d+(?:\.\d+)?)\s*([bkmgt]?)b?$/i.exec(String(value).trim());
  const bytes = m ? Math.floor(Number(m[1]) * UNITS[m[2]!.toLowerCase()]!) : NaN;
  if (!Number.isFinite(bytes) || bytes < min) {
    throw new ConfigError(`${flag} must be a size of at least ${min / 1024 ** 2}m such as 512m or 1g, got ${quote(value)}`);
  }
  return bytes;
}

/** A cassette path: a `.jsonl` file as given, or `run.jsonl` in a directory. */
export function cassetteFile(value: string): string {
  return value.endsWith('.jsonl') ? resolve(value) : join(resolve(value), 'run.jsonl');
}

function cassetteOptions(o: RunOptions): Pick<ResolvedOptions, 'record' | 'replay' | 'replayMode'> {
  if (o.record && o.replay) throw new ConfigError('--record and --replay cannot be combined');
  const mode = o.replayMode ?? 'strict';
  if (mode !== 'strict' && mode !== 'lenient') throw new ConfigError(`--replay-mode must be strict or lenient, got ${quote(mode)}`);
  const replay = o.replay ? cassetteFile(o.replay) : undefined;
  if (replay && !existsSync(replay)) throw new ConfigError(`--replay ${o.replay}: no cassette at ${replay}`);
  return { record: o.record ? cassetteFile(o.record) : undefined, replay, replayMode: mode };
}

function copyOptions(o: RunOptions): Pick<ResolvedOptions, 'mount' | 'exclude' | 'gitignore' | 'out' | 'apply'> {
  const mount = o.mount ?? 'rw';
  if (mount !== 'rw' && mount !== 'ro' && mount !== 'copy') throw new ConfigError(`--mount must be rw, ro or copy, got ${quote(mount)}`);
  if (mount !== 'copy') {
    for (const [flag, given] of [['--apply', o.apply], ['--out', o.out], ['--exclude', o.exclude?.length]] as const) {
      if (given) throw new ConfigError(`${flag} needs --mount copy`);
    }
  }
  return { mount, exclude: o.exclude ?? [], gitignore: o.gitignore ?? true, out: o.out, apply: o.apply ?? false };
}

function safeTaskDir(dir: string, allowed: boolean): string {
  const reason = allowed ? undefined : dangerousMountReason(dir);
  if (reason) throw new ConfigError(`--task-dir ${dir} is refused: ${reason}; pass --allow-dangerous-mount to mount it anyway`);
  return dir;
}

function runtime(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(value)) throw new ConfigError(`--runtime must be a runtime name such as runsc, got ${quote(value)}`);
  return value;
}

function network(value: string): string {
  if (value === 'host' || value.startsWith('container:')) {
    throw new ConfigError(`--network ${value} would share the host's or another container's network; use none or bridge`);
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(value)) throw new ConfigError(`--network must be none, bridge or a network name, got ${quote(value)}`);
  return value;
}

function envPairs(env: string[] | Record<string, string>): string[] {
  const pairs = Array.isArray(env) ? env : Object.entries(env).map(([k, v]) => `${k}=${v}`);
  for (const pair of pairs) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(pair)) throw new ConfigError(`--env must be KEY=VALUE, got ${quote(pair)}`);
  }
  return pairs;
}
