import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import { SandboxError, errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import type { ExecResult } from '../types.js';
import { type ContainerSpec, createOptions } from './container-spec.js';
import { docker as dockerCall, dockerTimeoutMs, withDeadline } from './deadline.js';
import { OutputCollector, renderBoth } from './output-collector.js';
import { removeContainer, removeRunContainers } from './reaper.js';
import type { ExecOptions, Sandbox } from './sandbox.js';
import { type WarmContainer, WarmPool, type WarmPoolOptions } from './warm-pool.js';

const log = createLogger('docker');
/** After the process exits, how long its output may take to arrive. */
const DRAIN_MS = 2_000;
/** How long a just-started warm container may take to be ready for its command. */
const READY_MS = 5_000;

export interface DockerSandboxOptions extends ContainerSpec {
  docker: Docker;
  /** Characters of stdout+stderr the result may carry. */
  maxOutput: number;
  /** Start containers ahead of time (the warm pool). Default true. */
  warm?: boolean;
  /** Pool sizing; see WarmPoolOptions. */
  pool?: Pick<WarmPoolOptions, 'minReady' | 'maxReady' | 'idleSeconds'>;
}

/** What a call went through, before it becomes an ExecResult. */
interface Outcome {
  exitCode: number;
  timedOut: boolean;
  aborted: boolean;
  oomKilled: boolean;
}

/**
 * One fresh container per command, removed afterwards. With the warm pool
 * (the default) the container was created and started ahead of time and
 * gets its command through a private FIFO channel, so the Docker API is not
 * on the call's path; otherwise the call creates, attaches and starts one.
 */
export class DockerSandbox implements Sandbox {
  private readonly removals = new Set<Promise<void>>();
  private readonly pool?: WarmPool;

  constructor(private readonly options: DockerSandboxOptions) {
    if (options.warm !== false) {
      this.pool = new WarmPool({ docker: options.docker, spec: options, ...options.pool });
      this.pool.warm();
    }
  }

  async exec(command: string, { timeoutSeconds, signal }: ExecOptions): Promise<ExecResult> {
    const started = Date.now();
    const out = new OutputCollector(this.options.maxOutput);
    const err = new OutputCollector(this.options.maxOutput);
    const warm = await this.pool?.take(signal);
    let run: { id: string; outcome: Outcome } | undefined;
    if (warm) run = await this.execWarm(warm, command, timeoutSeconds, signal, out, err);
    run ??= await this.execCold(command, timeoutSeconds, signal, out, err);
    return {
      command,
      ...run.outcome,
      ...renderBoth(out, err, this.options.maxOutput),
      durationMs: Date.now() - started,
      containerId: run.id,
      timeoutSeconds,
    };
  }

  /** The hot path: no Docker API call unless the command must be killed. Undefined: not ready, run cold. */
  private async execWarm(
    warm: WarmContainer,
    command: string,
    timeoutSeconds: number,
    signal: AbortSignal | undefined,
    out: OutputCollector,
    err: OutputCollector,
  ): Promise<{ id: string; outcome: Outcome } | undefined> {
    const short = warm.id.slice(0, 12);
    const fd = await waitReady(warm);
    if (fd === undefined) {
      log(`${short} warm container not ready; running cold`);
      this.track(this.pool!.discard(warm));
      return undefined;
    }
    const running = warm.channel.start(fd, command, out, err);
    const guard = this.guard(warm.id, timeoutSeconds, signal);
    try {
      // Exit without a report means the runner died (killed, or OOM took it).
      const status = await withDeadline(
        Promise.race([running.status, warm.exited.then(() => Promise.race([running.status, sleep(200).then(() => undefined)]))]),
        this.hardLimitMs(timeoutSeconds),
        'the warm container',
      );
      const code = status?.exitCode ?? (await warm.exited);
      guard.stop();
      await withDeadline(running.drained, DRAIN_MS, 'the output channel').catch(() => {});
      // Any OOM kill in the container counts, even when the command carried on.
      const oomKilled = guard.clean() && (status ? status.oomKills > 0 : await this.wasOomKilled(warm.id));
      log(`${short} exited ${code}${guard.timedOut ? ' (timed out)' : ''}${oomKilled ? ' (out of memory)' : ''} (warm)`);
      return { id: warm.id, outcome: guard.outcome(code, oomKilled) };
    } finally {
      guard.stop();
      running.destroy();
      this.track(this.pool!.discard(warm));
    }
  }

  /** Create, attach, start, wait: the docker CLI's order. */
  private async execCold(
    command: string,
    timeoutSeconds: number,
    signal: AbortSignal | undefined,
    out: OutputCollector,
    err: OutputCollector,
  ): Promise<{ id: string; outcome: Outcome }> {
    const { docker } = this.options;
    const container = await dockerCall(docker.createContainer(createOptions(this.options, ['/bin/bash', '-c', command])), 'docker create').catch(
      (e) => {
        throw e instanceof SandboxError ? e : new SandboxError(`docker create: ${errorMessage(e)}`);
      },
    );
    const id = container.id;
    const short = id.slice(0, 12);
    log(`${short} created for: ${command.slice(0, 80)}`);
    let guard: ReturnType<DockerSandbox['guard']> | undefined;
    try {
      const stream = await dockerCall(container.attach({ stream: true, stdout: true, stderr: true }), 'docker attach');
      const ended = new Promise<void>((resolve) => {
        stream.once('end', resolve);
        stream.once('close', resolve);
        stream.once('error', () => resolve());
      });
      docker.modem.demuxStream(stream, out.writable(), err.writable());
      await dockerCall(container.start(), 'docker start');
      log(`${short} started`);
      guard = this.guard(id, timeoutSeconds, signal);
      // Wait after start with the default condition: it answers at once if the command already exited.
      const { StatusCode } = (await withDeadline(container.wait(), this.hardLimitMs(timeoutSeconds), 'docker wait')) as { StatusCode: number };
      guard.stop();
      await withDeadline(ended, DRAIN_MS, 'the output stream').catch(() => (stream as unknown as Duplex).destroy());
      const oomKilled = guard.clean() && (await this.wasOomKilled(id));
      log(`${short} exited ${StatusCode}${guard.timedOut ? ' (timed out)' : ''}${oomKilled ? ' (out of memory)' : ''}`);
      return { id, outcome: guard.outcome(StatusCode, oomKilled) };
    } catch (e) {
      throw e instanceof SandboxError ? e : new SandboxError(`docker: ${errorMessage(e)}`);
    } finally {
      guard?.stop();
      this.track(removeContainer(docker, id).catch((e) => log(`${short} remove failed: ${errorMessage(e)}`)));
    }
  }

  /** Kill the container on timeout or abort, and remember which came first. */
  private guard(id: string, timeoutSeconds: number, signal: AbortSignal | undefined) {
    let timedOut = false;
    let aborted = false;
    const kill = () => {
      dockerCall(this.options.docker.getContainer(id).kill({ signal: 'SIGKILL' }), 'docker kill').catch((e) =>
        log(`${id.slice(0, 12)} kill: ${errorMessage(e)}`),
      );
    };
    const timer = setTimeout(() => {
      if (aborted) return;
      timedOut = true;
      kill();
    }, timeoutSeconds * 1000);
    const onAbort = () => {
      if (timedOut) return;
      aborted = true;
      kill();
    };
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    return {
      get timedOut() {
        return timedOut;
      },
      clean: () => !timedOut && !aborted,
      stop: () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      },
      outcome: (code: number, oomKilled: boolean): Outcome => ({
        exitCode: timedOut ? 124 : aborted ? 130 : code,
        timedOut,
        aborted,
        oomKilled,
      }),
    };
  }

  /** Past this, a call whose container would not stop even when killed is a sandbox failure. */
  private hardLimitMs(timeoutSeconds: number): number {
    return timeoutSeconds * 1000 + dockerTimeoutMs() + 5_000;
  }

  /** Removal happens off the critical path; close() waits for it. */
  private track(work: Promise<void>): void {
    const p = work.finally(() => this.removals.delete(p));
    this.removals.add(p);
  }

  private async wasOomKilled(id: string): Promise<boolean> {
    try {
      const info = await dockerCall(this.options.docker.getContainer(id).inspect(), 'docker inspect');
      return info.State.OOMKilled === true;
    } catch {
      return false;
    }
  }

  /** Kill and remove every container of this run, warm ones included. */
  async close(): Promise<void> {
    await this.pool?.close();
    await Promise.allSettled([...this.removals]);
    await removeRunContainers(this.options.docker, this.options.runId);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** Poll the channel until the runner blocks on it; undefined if the container exits or takes too long. */
async function waitReady(warm: WarmContainer): Promise<number | undefined> {
  let exited = false;
  void warm.exited.then(() => (exited = true));
  const deadline = Date.now() + READY_MS;
  for (;;) {
    const fd = warm.channel.tryOpenCommand();
    if (fd !== undefined) return fd;
    if (exited || Date.now() > deadline) return undefined;
    await sleep(2);
  }
}
