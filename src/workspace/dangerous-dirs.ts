import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, sep } from 'node:path';

/** Mounting one of these read-write would hand a part of the host to the model. */
const WHOLE = ['/', '/bin', '/boot', '/dev', '/etc', '/home', '/lib', '/lib32', '/lib64', '/opt', '/proc', '/root', '/run', '/sbin', '/srv', '/sys', '/tmp', '/usr', '/var', '/var/lib', '/var/log', '/var/run'];
/** ... and so would anything inside these. */
const TREES = ['/bin', '/boot', '/dev', '/etc', '/lib', '/lib32', '/lib64', '/proc', '/run', '/sbin', '/sys', '/usr', '/var/lib/docker', '/var/run'];

/** Where Docker daemons listen, besides DOCKER_HOST. */
const SOCKETS = ['/var/run/docker.sock', '/run/docker.sock', '/run/containerd/containerd.sock'];

/**
 * Why mounting `dir` (an absolute, existing path) at /workspace would be
 * dangerous, or undefined when it is not: the root, the home directory
 * itself, a system directory, or a directory holding a Docker socket.
 */
export function dangerousMountReason(dir: string, dockerHost = process.env.DOCKER_HOST): string | undefined {
  const real = safeRealpath(dir);
  if (real === '/') return 'it is the root directory';
  if (real === safeRealpath(homedir())) return 'it is your home directory';
  if (WHOLE.includes(real) || TREES.some((t) => real.startsWith(t + sep))) return 'it is a system directory';
  const sockets = [...SOCKETS, ...(dockerHost?.startsWith('unix://') ? [dockerHost.slice('unix://'.length)] : [])];
  for (const socket of sockets) {
    if (existsSync(socket) && safeRealpath(socket).startsWith(real + sep)) return `it contains the Docker socket ${socket}`;
  }
  const found = findSocket(real, 2);
  return found ? `it contains a Docker socket (${found})` : undefined;
}

function safeRealpath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** A socket named like Docker's within `depth` levels, without following links. */
function findSocket(dir: string, depth: number): string | undefined {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return undefined;
  }
  for (const name of entries) {
    const path = join(dir, name);
    let st;
    try {
      st = statSync(path, { throwIfNoEntry: false });
    } catch {
      continue;
    }
    if (!st) continue;
    if (st.isSocket() && /docker|containerd|podman/.test(name)) return path;
    if (depth > 1 && st.isDirectory() && name !== 'node_modules' && name !== '.git') {
      const inner = findSocket(path, depth - 1);
      if (inner) return inner;
    }
  }
  return undefined;
}
