import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { DockerUnavailableError, errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { withDeadline } from './deadline.js';

const log = createLogger('docker');
const PING_MS = 5_000;

interface Strategy {
  label: string;
  /** Returns undefined when the strategy does not apply here (e.g. the socket file is absent). */
  client(): Docker | undefined;
}

/**
 * Ordered like testcontainers-node: DOCKER_HOST, the default socket, then
 * rootless and desktop sockets. A DOCKER_HOST that is set is the only choice:
 * silently using another daemon than the one named would surprise.
 */
function strategies(): Strategy[] {
  const socket = (label: string, path: string | undefined): Strategy => ({
    label: `${label} ${path ?? '(unset)'}`,
    client: () => (path && existsSync(path) ? new Docker({ socketPath: path }) : undefined),
  });
  const host = process.env.DOCKER_HOST;
  if (host) return [{ label: `DOCKER_HOST=${host}`, client: () => new Docker() }];
  return [
    socket('socket', '/var/run/docker.sock'),
    socket('rootless socket', process.env.XDG_RUNTIME_DIR && join(process.env.XDG_RUNTIME_DIR, 'docker.sock')),
    socket('desktop socket', join(homedir(), '.docker', 'run', 'docker.sock')),
  ];
}

let cached: Promise<Docker> | undefined;

/**
 * Find a Docker daemon that answers a ping, trying each strategy in order.
 * Fails closed with every attempt named; never falls back to running on the host.
 */
export function connectDocker(): Promise<Docker> {
  cached ??= findDocker().catch((err) => {
    cached = undefined;
    throw err;
  });
  return cached;
}

async function findDocker(): Promise<Docker> {
  const attempts: string[] = [];
  for (const strategy of strategies()) {
    const docker = strategy.client();
    if (!docker) {
      attempts.push(`${strategy.label}: not present`);
      continue;
    }
    log(`trying ${strategy.label}...`);
    try {
      await withDeadline(docker.ping(), PING_MS, `docker ping via ${strategy.label}`);
      log(`using ${strategy.label}`);
      return docker;
    } catch (err) {
      attempts.push(`${strategy.label}: ${errorMessage(err)}`);
      log(`${strategy.label} failed: ${errorMessage(err)}`);
    }
  }
  throw new DockerUnavailableError(
    `Docker is not reachable (tried ${attempts.join('; ')}). Start the daemon (e.g. \`sudo systemctl start docker\` or \`sudo dockerd &\`) or point DOCKER_HOST at it.`,
    attempts,
  );
}

/** Requests that hold the connection for as long as a container or a build lives: never queued. */
const LONG_LIVED = /\/(wait|attach|events|build|logs)\b|^\/images\/create/;

/**
 * Cap the short Docker API requests in flight at `max` (a batch shares one
 * daemon between many episodes). Long-lived requests (wait, attach, builds)
 * pass straight through: queueing them could deadlock.
 */
export function limitDockerRequests(docker: Docker, max: number): void {
  const modem = docker.modem as unknown as { dial: (options: { path?: string; isStream?: boolean }, cb: (...args: unknown[]) => void) => unknown };
  const dial = modem.dial.bind(modem);
  let active = 0;
  const queue: (() => void)[] = [];
  modem.dial = (options, callback) => {
    if (options.isStream || LONG_LIVED.test(options.path ?? '')) return dial(options, callback);
    const start = () => {
      active++;
      dial(options, (...args: unknown[]) => {
        active--;
        queue.shift()?.();
        callback(...args);
      });
    };
    if (active < max) start();
    else queue.push(start);
    return undefined;
  };
}
