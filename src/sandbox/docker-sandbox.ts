import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { SandboxError, errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import type { ExecResult } from '../types.js';
import { withDeadline } from './deadline.js';
import { runLabels } from './labels.js';
import { OutputCollector, renderBoth } from './output-collector.js';
import { removeContainer, removeRunContainers } from './reaper.js';
import type { ExecOptions, Sandbox } from './sandbox.js';

const log = createLogger('docker');
const API_MS = 30_000;
/** After the process exits, how long the attach stream may take to deliver its last bytes. */
const DRAIN_MS = 5_000;

export interface DockerSandboxOptions {
  docker: Docker;
  runId: string;
  /** The sandbox image, e.g. `sandloop-sandbox:latest`. */
  image: string;
  /** Absolute host path mounted at /workspace. */
  taskDir: string;
  /** Mount the task dir read-only. */
  readOnly?: boolean;
  /** Docker network mode: `none` (default) or `bridge`. */
  network?: string;
  /** Memory limit in bytes; swap is disabled by setting the same value. */
  memoryBytes: number;
  cpus: number;
  pids: number;
  /** `KEY=VALUE` pairs: the only variables that enter the container. */
  env?: string[];
  /** `uid:gid` to run as; undefined keeps the image's user. */
  user?: string;
  /** Characters of stdout+stderr the result may carry. */
  maxOutput: number;
  /** Size of the tmpfs mounted at /tmp, e.g. `256m`. */
  tmpSize?: string;
}

export const SANDBOX_HOME = '/home/sandbox';

/** One fresh container per command, removed afterwards. */
export class DockerSandbox implements Sandbox {
  private readonly live = new Set<string>();
  private readonly removals = new Set<Promise<void>>();

  constructor(private readonly options: DockerSandboxOptions) {}

  async exec(command: string, { timeoutSeconds, signal }: ExecOptions): Promise<ExecResult> {
    const { docker } = this.options;
    const started = Date.now();
    const container = await withDeadline(docker.createContainer(this.createOptions(command)), API_MS, 'docker create');
    const id = container.id;
    const short = id.slice(0, 12);
    this.live.add(id);
    log(`${short} created for: ${command.slice(0, 80)}`);
    let timedOut = false;
    let aborted = false;
    let timer: NodeJS.Timeout | undefined;
    const kill = () => {
      container.kill({ signal: 'SIGKILL' }).catch((err) => log(`${short} kill failed: ${errorMessage(err)}`));
    };
    const onAbort = () => {
      aborted = true;
      kill();
    };
    try {
      const out = new OutputCollector(this.options.maxOutput);
      const err = new OutputCollector(this.options.maxOutput);
      const stream = await withDeadline(container.attach({ stream: true, stdout: true, stderr: true }), API_MS, 'docker attach');
      const ended = new Promise<void>((resolve) => {
        stream.once('end', resolve);
        stream.once('close', resolve);
        stream.once('error', () => resolve());
      });
      docker.modem.demuxStream(stream, out.writable(), err.writable());
      await withDeadline(container.start(), API_MS, 'docker start');
      log(`${short} started`);
      timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, timeoutSeconds * 1000);
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      // Wait after start with the default condition: it answers at once if the command already exited.
      const { StatusCode } = (await container.wait()) as { StatusCode: number };
      clearTimeout(timer);
      await withDeadline(ended, DRAIN_MS, 'the output stream').catch(() => (stream as unknown as Duplex).destroy());
      const oomKilled = !timedOut && !aborted && StatusCode === 137 && (await this.wasOomKilled(id));
      log(`${short} exited ${StatusCode}${timedOut ? ' (timed out)' : ''}${oomKilled ? ' (out of memory)' : ''}`);
      const output = renderBoth(out, err, this.options.maxOutput);
      return {
        command,
        exitCode: timedOut ? 124 : aborted ? 130 : StatusCode,
        ...output,
        timedOut,
        oomKilled,
        aborted,
        durationMs: Date.now() - started,
        containerId: id,
        timeoutSeconds,
      };
    } catch (err) {
      throw err instanceof SandboxError ? err : new SandboxError(`docker: ${errorMessage(err)}`);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      this.removeInBackground(id);
    }
  }

  /** Removal happens off the critical path; close() waits for it. */
  private removeInBackground(id: string): void {
    const removal = removeContainer(this.options.docker, id)
      .catch((err) => log(`${id.slice(0, 12)} remove failed: ${errorMessage(err)}`))
      .finally(() => {
        this.live.delete(id);
        this.removals.delete(removal);
      });
    this.removals.add(removal);
  }

  private async wasOomKilled(id: string): Promise<boolean> {
    try {
      const info = await withDeadline(this.options.docker.getContainer(id).inspect(), API_MS, 'docker inspect');
      return info.State.OOMKilled === true;
    } catch {
      return false;
    }
  }

  private createOptions(command: string): Docker.ContainerCreateOptions {
    const o = this.options;
    return {
      Image: o.image,
      Cmd: ['/bin/bash', '-c', command],
      WorkingDir: '/workspace',
      Env: [`HOME=${SANDBOX_HOME}`, 'LANG=C.UTF-8', 'TERM=dumb', ...(o.env ?? [])],
      User: o.user,
      Labels: runLabels(o.runId),
      Tty: false,
      OpenStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      NetworkDisabled: (o.network ?? 'none') === 'none',
      HostConfig: {
        Binds: [`${o.taskDir}:/workspace:${o.readOnly ? 'ro' : 'rw'}`],
        NetworkMode: o.network ?? 'none',
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        ReadonlyRootfs: true,
        Tmpfs: {
          '/tmp': `rw,exec,nosuid,nodev,size=${o.tmpSize ?? '256m'},mode=1777`,
          [SANDBOX_HOME]: 'rw,exec,nosuid,nodev,size=64m,mode=1777',
        },
        PidsLimit: o.pids,
        Memory: o.memoryBytes,
        MemorySwap: o.memoryBytes,
        NanoCpus: Math.round(o.cpus * 1e9),
        Init: true,
        // Capture goes through attach; the daemon's json log would only slow big outputs down.
        LogConfig: { Type: 'none', Config: {} },
      },
    };
  }

  /** Kill and remove every container of this run, including ones still running. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.removals]);
    await removeRunContainers(this.options.docker, this.options.runId);
    this.live.clear();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
