import type Docker from 'dockerode';
import { runLabels } from './labels.js';

/** Everything that decides what a call's container looks like. Cold and warm containers share it. */
export interface ContainerSpec {
  runId: string;
  /** The sandbox image, e.g. `sandloop-sandbox:latest`. */
  image: string;
  /** What is mounted at /workspace: an absolute host path (bind mount) or a Docker volume name. */
  workspace: string;
  /** Mount it read-only. */
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
  /** Size of the tmpfs mounted at /tmp, e.g. `256m`. */
  tmpSize?: string;
  /** OCI runtime, e.g. `runsc` for gVisor; the daemon's default when unset. */
  runtime?: string;
  /** Largest file any process may write, in bytes (RLIMIT_FSIZE): `--workspace-max`. */
  fileSizeMax?: number;
  /** Paths under /workspace that the container must not read (a .env with the API key): an empty read-only file covers each. */
  hidden?: string[];
}

export const SANDBOX_HOME = '/home/sandbox';

/** The invoking user's uid:gid, so files written to the task dir are theirs; undefined for root. */
export function invokingUser(): string | undefined {
  const uid = process.getuid?.();
  return uid !== undefined && uid !== 0 ? `${uid}:${process.getgid?.()}` : undefined;
}

/**
 * Docker create options for one call. `extraBinds` and `autoRemove` are the
 * only ways a warm container differs, and neither changes what the command sees
 * apart from the channel files under /.sandloop.
 */
export function createOptions(
  spec: ContainerSpec,
  cmd: string[],
  extra: { binds?: string[]; autoRemove?: boolean } = {},
): Docker.ContainerCreateOptions {
  return {
    Image: spec.image,
    Cmd: cmd,
    WorkingDir: '/workspace',
    Env: [`HOME=${SANDBOX_HOME}`, 'LANG=C.UTF-8', 'TERM=dumb', ...(spec.env ?? [])],
    User: spec.user,
    Labels: runLabels(spec.runId),
    Tty: false,
    OpenStdin: false,
    AttachStdout: !extra.binds,
    AttachStderr: !extra.binds,
    NetworkDisabled: (spec.network ?? 'none') === 'none',
    HostConfig: {
      Binds: [`${spec.workspace}:/workspace:${spec.readOnly ? 'ro' : 'rw'}`, ...(spec.hidden ?? []).map((p) => `/dev/null:${p}:ro`), ...(extra.binds ?? [])],
      NetworkMode: spec.network ?? 'none',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      Tmpfs: {
        '/tmp': `rw,exec,nosuid,nodev,size=${spec.tmpSize ?? '256m'},mode=1777`,
        [SANDBOX_HOME]: 'rw,exec,nosuid,nodev,size=64m,mode=1777',
      },
      PidsLimit: spec.pids,
      Memory: spec.memoryBytes,
      MemorySwap: spec.memoryBytes,
      NanoCpus: Math.round(spec.cpus * 1e9),
      Init: true,
      AutoRemove: extra.autoRemove ?? false,
      // Capture goes through attach or the channel; the daemon's json log would only slow big outputs down.
      LogConfig: { Type: 'none', Config: {} },
      ...(spec.runtime ? { Runtime: spec.runtime } : {}),
      ...(spec.fileSizeMax ? { Ulimits: [{ Name: 'fsize', Soft: spec.fileSizeMax, Hard: spec.fileSizeMax }] } : {}),
    },
  };
}
