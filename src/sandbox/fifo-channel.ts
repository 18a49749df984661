import { execFile } from 'node:child_process';
import { constants, openSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { OutputCollector } from './output-collector.js';

const run = promisify(execFile);
const PREFIX = 'sandloop-chan-';

/** Where the channel's files appear inside a warm container. */
export const CHANNEL_MOUNT = '/.sandloop';
const NAMES = ['cmd', 'out', 'err', 'status'] as const;
/** The status line is `<exit code> <oom kills>\n`; anything longer is not a status. */
const STATUS_MAX = 64;

/**
 * The private channel between sandloop and one warm container: four FIFOs in
 * a host directory of their own (mode 0700), each bind-mounted as a single
 * file. The container can open those four files and nothing else of the
 * host; it cannot create files through them, and it sees no other channel.
 */
export class FifoChannel {
  private constructor(readonly dir: string) {}

  static async create(): Promise<FifoChannel> {
    const dir = await mkdtemp(join(tmpdir(), `${PREFIX}${process.pid}-`));
    // 0666 so that an image's own USER can open them; the 0700 directory keeps other host users out.
    await run('mkfifo', ['-m', '0666', ...NAMES.map((n) => join(dir, n))]);
    return new FifoChannel(dir);
  }

  binds(): string[] {
    return NAMES.map((n) => `${join(this.dir, n)}:${CHANNEL_MOUNT}/${n}${n === 'cmd' ? ':ro' : ''}`);
  }

  /**
   * Open the command FIFO for writing without blocking. This succeeds only
   * while the container's runner is blocked reading it, i.e. it is ready.
   */
  tryOpenCommand(): number | undefined {
    try {
      return openSync(join(this.dir, 'cmd'), constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENXIO') return undefined;
      throw err;
    }
  }

  /**
   * Send the command and stream the output into the collectors. Readers are
   * opened before the command goes out so the runner never blocks on them.
   * Resolves `status` when the runner reports; `drained` when both output
   * FIFOs reached end of file. Bytes are never trusted: the status is parsed
   * strictly and bounded.
   */
  start(commandFd: number, command: string, out: OutputCollector, err: OutputCollector): RunningCommand {
    const outSocket = this.reader('out');
    const errSocket = this.reader('err');
    const statusSocket = this.reader('status');
    outSocket.on('data', (chunk: Buffer) => out.push(chunk));
    errSocket.on('data', (chunk: Buffer) => err.push(chunk));
    const ended = (s: Socket) => new Promise<void>((resolve) => s.once('close', () => resolve()));
    const drained = Promise.all([ended(outSocket), ended(errSocket)]).then(() => {});

    const status = new Promise<ChannelStatus | undefined>((resolve) => {
      let text = '';
      statusSocket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (text.length > STATUS_MAX) statusSocket.destroy();
      });
      statusSocket.once('close', () => resolve(parseStatus(text)));
    });

    const cmd = new Socket({ fd: commandFd, readable: false, writable: true });
    cmd.on('error', () => {});
    cmd.end(command);

    return {
      status,
      drained,
      destroy: () => {
        for (const s of [outSocket, errSocket, statusSocket, cmd]) s.destroy();
      },
    };
  }

  async dispose(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true }).catch(() => {});
  }

  private reader(name: (typeof NAMES)[number]): Socket {
    const fd = openSync(join(this.dir, name), constants.O_RDONLY | constants.O_NONBLOCK);
    const socket = new Socket({ fd, readable: true, writable: false });
    socket.on('error', () => {});
    return socket;
  }
}

export interface ChannelStatus {
  exitCode: number;
  oomKills: number;
}

export interface RunningCommand {
  /** The runner's report, or undefined when it closed without a valid one (it died). */
  status: Promise<ChannelStatus | undefined>;
  drained: Promise<void>;
  destroy(): void;
}

export function parseStatus(text: string): ChannelStatus | undefined {
  const m = /^(\d{1,3}) (\d{1,9})\n$/.exec(text);
  if (!m) return undefined;
  const exitCode = Number(m[1]);
  return exitCode <= 255 ? { exitCode, oomKills: Number(m[2]) } : undefined;
}

/**
 * The warm container's first process. It blocks on the command FIFO (and
 * expires by itself after `idleSeconds`), runs the command once with its
 * output on the output FIFOs, reports `<exit code> <oom kills>`, and exits,
 * which ends the container and everything the command left running.
 */
export function runnerScript(idleSeconds: number): string {
  const c = CHANNEL_MOUNT;
  return [
    `cmd=$(timeout ${idleSeconds} cat ${c}/cmd) || exit 0`,
    `[ -n "$cmd" ] || exit 0`,
    `bash -c "$cmd" </dev/null >${c}/out 2>${c}/err`,
    'code=$?',
    // cgroup v1 and v2 count OOM kills; the command cannot write these files. Builtins only: no process spawns.
    'oom=0',
    'for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do',
    '  [ -r "$f" ] || continue',
    '  while read -r k v; do [ "$k" = oom_kill ] && oom=$v; done < "$f"',
    'done',
    `printf '%s %s\\n' "$code" "$oom" >${c}/status`,
  ].join('\n');
}

/** Remove channel directories left in the temp dir by sandloop processes that are gone. */
export async function sweepStaleChannels(): Promise<void> {
  const entries = await readdir(tmpdir()).catch(() => [] as string[]);
  await Promise.all(
    entries.map(async (name) => {
      const pid = Number(/^sandloop-chan-(\d+)-/.exec(name)?.[1]);
      if (!pid || pidAlive(pid)) return;
      await rm(join(tmpdir(), name), { recursive: true, force: true }).catch(() => {});
    }),
  );
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
