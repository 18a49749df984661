import { existsSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type Docker from 'dockerode';
import { ApplyRefusedError } from './errors.js';
import { runLoop } from './loop/agent-loop.js';
import { buildSystemPrompt } from './loop/system-prompt.js';
import { AnthropicModel } from './model/anthropic-model.js';
import type { Model } from './model/model.js';
import { RecordingModel } from './model/recording-model.js';
import { ReplayModel } from './model/replay-model.js';
import { ScriptedModel } from './model/scripted-model.js';
import { type ResolvedOptions, type RunOptions, resolveOptions } from './options.js';
import { TranscriptWriter } from './report/transcript.js';
import { setDockerTimeout } from './sandbox/deadline.js';
import { connectDocker } from './sandbox/docker-client.js';
import { invokingUser } from './sandbox/container-spec.js';
import { DockerSandbox } from './sandbox/docker-sandbox.js';
import { sweepStaleChannels } from './sandbox/fifo-channel.js';
import { DEFAULT_IMAGE, ensureImage } from './sandbox/image.js';
import { newRunId } from './sandbox/labels.js';
import { checkDaemonSettings } from './sandbox/preflight.js';
import { sweepOrphans } from './sandbox/reaper.js';
import type { Message, RunEvent, RunResult, WorkspaceReport } from './types.js';
import { applyChanges } from './workspace/apply-changes.js';
import { CopyWorkspace } from './workspace/copy-workspace.js';

/**
 * One sandbox and one conversation: `run` a prompt, then another that sees
 * the history (the REPL), then `close` to remove every container.
 *
 * @example
 * await using session = await AgentSession.open({ taskDir: '.' });
 * const first = await session.run('List the Python files here');
 * const second = await session.run('Now count their lines');
 */
export class AgentSession {
  readonly messages: Message[] = [];
  private closed = false;

  private constructor(
    readonly runId: string,
    readonly options: ResolvedOptions,
    private readonly model: Model,
    private readonly sandbox: DockerSandbox,
    private readonly workspace: CopyWorkspace | undefined,
    private readonly signal: AbortSignal,
    private readonly onEvent: (event: RunEvent) => void,
    private readonly transcript?: TranscriptWriter,
  ) {}

  /**
   * Validate options (ConfigError), find Docker (DockerUnavailableError), make
   * sure the image exists, and with `mount: 'copy'` copy the task dir into the
   * run's volume.
   */
  static async open(options: RunOptions): Promise<AgentSession> {
    const resolved = resolveOptions(options, DEFAULT_IMAGE);
    // Opened first: a path that cannot be written is a usage error before anything is created.
    const transcript = options.transcript ? TranscriptWriter.open(options.transcript) : undefined;
    let warn = (_message: string) => {};
    const model = makeModel(resolved, (message) => warn(message));
    setDockerTimeout(resolved.dockerTimeoutMs);
    const docker: Docker = options.docker ?? (await connectDocker());
    await Promise.all([sweepOrphans(docker), sweepStaleChannels()]);
    await checkDaemonSettings(docker, resolved);
    const progress = options.onProgress ?? (() => {});
    await ensureImage(docker, resolved.image, progress);
    const runId = options.runId ?? newRunId();
    // A secrets file inside the task dir (the .env the API key came from) is left out of a copy and covered in a bind mount.
    const secrets = (options.secretFiles ?? [])
      .map((f) => relative(resolved.taskDir, resolve(f)))
      .filter((rel) => rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) && existsSync(join(resolved.taskDir, rel)));
    const workspace =
      resolved.mount === 'copy'
        ? await CopyWorkspace.create({
            docker,
            runId,
            taskDir: resolved.taskDir,
            image: resolved.image,
            excludes: [...resolved.exclude, ...secrets.map((rel) => `/${rel}`)],
            gitignore: resolved.gitignore,
            progress,
          })
        : undefined;
    const sandbox = new DockerSandbox({
      docker,
      runId,
      image: resolved.image,
      workspace: workspace?.volume ?? resolved.taskDir,
      readOnly: resolved.mount === 'ro',
      network: resolved.network,
      memoryBytes: resolved.memoryBytes,
      cpus: resolved.cpus,
      pids: resolved.pids,
      env: resolved.env,
      user: invokingUser(),
      maxOutput: resolved.maxOutput,
      warm: resolved.warm,
      runtime: resolved.runtime,
      fileSizeMax: resolved.workspaceMaxBytes,
      hidden: workspace ? [] : secrets.map((rel) => `/workspace/${rel}`),
      pool: { maxReady: Math.max(2, resolved.parallel) },
    });
    const signal = options.signal ?? new AbortController().signal;
    const session = new AgentSession(runId, resolved, model, sandbox, workspace, signal, options.onEvent ?? (() => {}), transcript);
    warn = (message) => session.emit({ type: 'warning', turn: session.messages.filter((m) => m.role === 'assistant').length + 1, message });
    session.emit({
      type: 'system',
      subtype: 'init',
      run_id: runId,
      model: model.name,
      scripted: model instanceof ScriptedModel || model instanceof ReplayModel || (model instanceof RecordingModel && model.name.startsWith('scripted:')),
      task_dir: resolved.taskDir,
      image: resolved.image,
      max_turns: resolved.maxTurns,
    });
    return session;
  }

  get modelName(): string {
    return this.model.name;
  }

  /** Run one prompt to its end. Never throws for what happens inside the loop: see `status`. */
  async run(prompt: string): Promise<RunResult> {
    const started = Date.now();
    appendUserText(this.messages, prompt);
    this.emit({ type: 'user', turn: 0, text: prompt });
    const outcome = await runLoop(this.messages, {
      model: this.model,
      sandbox: this.sandbox,
      system: buildSystemPrompt(this.options),
      maxTurns: this.options.maxTurns,
      maxTokens: this.options.maxTokens,
      timeoutSeconds: this.options.timeoutSeconds,
      parallel: this.options.parallel,
      readOnlyWorkspace: this.options.mount === 'ro',
      signal: this.signal,
      onEvent: (event) => this.emit(event),
    });
    const result: RunResult = {
      status: outcome.status,
      result: outcome.result,
      turns: outcome.turns,
      tool_calls: outcome.toolCalls,
      usage: outcome.usage,
      duration_ms: Date.now() - started,
      run_id: this.runId,
      model: this.model.name,
      ...(outcome.error !== undefined ? { error: outcome.error, error_type: outcome.errorType } : {}),
      messages: this.messages,
    };
    const { messages: _history, ...summary } = result;
    this.emit({ type: 'result', ...summary });
    return result;
  }

  /**
   * `--mount copy`: copy the finished workspace out to `--out` with
   * changes.patch and changes.json, and apply it to the task dir with
   * `apply` (refused, with `apply_refused` set, when the task dir changed
   * during the run). Undefined for bind mounts.
   */
  async finish(): Promise<WorkspaceReport | undefined> {
    if (!this.workspace) return undefined;
    const out = this.options.out ?? join('sandloop-results', this.runId);
    const report = await this.workspace.export(out, this.options.workspaceMaxBytes);
    if (this.options.apply) {
      try {
        applyChanges(this.options.taskDir, join(report.out, 'workspace'), report.changes, this.workspace.plan);
        report.applied = true;
      } catch (err) {
        if (!(err instanceof ApplyRefusedError)) throw err;
        report.apply_refused = err.message;
      }
      this.workspace.saveReport(report);
    }
    this.emit({ type: 'workspace', ...report });
    return report;
  }

  /** Kill and remove every container and volume of this run. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.sandbox.close();
      await this.workspace?.close();
    } finally {
      this.transcript?.close();
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private emit(event: RunEvent): void {
    this.transcript?.write(event);
    this.onEvent(event);
  }
}

function makeModel(o: ResolvedOptions, onWarning: (message: string) => void): Model {
  if (o.replay) return new ReplayModel(o.replay, { mode: o.replayMode, onWarning });
  const model = baseModel(o);
  return o.record ? new RecordingModel(model, o.record) : model;
}

function baseModel(o: ResolvedOptions): Model {
  if (typeof o.model !== 'string') return o.model;
  if (o.model.startsWith('scripted:')) return ScriptedModel.fromFile(o.model.slice('scripted:'.length));
  return new AnthropicModel({ model: o.model, apiKey: o.apiKey, baseURL: o.baseURL, maxRetries: o.maxRetries, gate: o.rateGate });
}

/** A new prompt after tool results joins that user message: roles must alternate. */
function appendUserText(messages: Message[], text: string): void {
  const last = messages.at(-1);
  if (last?.role === 'user') last.content.push({ type: 'text', text });
  else messages.push({ role: 'user', content: [{ type: 'text', text }] });
}

/**
 * Run one episode: the prompt, the loop, every bash call in a fresh container,
 * and cleanup of every container on the way out.
 *
 * @example
 * import { runAgent } from 'sandloop';
 * const result = await runAgent({ prompt: 'Create hello.py that prints Hello', taskDir: './work' });
 * console.log(result.status, result.result);
 */
export async function runAgent(options: RunOptions & { prompt: string }): Promise<RunResult> {
  const session = await AgentSession.open(options);
  try {
    const result = await session.run(options.prompt);
    const workspace = await session.finish();
    return workspace ? { ...result, workspace } : result;
  } finally {
    await session.close();
  }
}
