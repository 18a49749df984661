import type Docker from 'dockerode';
import { ConfigError } from '../errors.js';
import { docker as dockerCall } from './deadline.js';

const BUILTIN_NETWORKS = new Set(['none', 'bridge']);

/**
 * Settings only the daemon can vouch for, checked before any container
 * starts: the runtime is registered and the network exists.
 */
export async function checkDaemonSettings(docker: Docker, settings: { runtime?: string; network: string }): Promise<void> {
  if (settings.runtime) {
    const info = (await dockerCall(docker.info(), 'docker info')) as { Runtimes?: Record<string, unknown> };
    if (!info.Runtimes || !(settings.runtime in info.Runtimes)) {
      const known = Object.keys(info.Runtimes ?? {}).join(', ') || 'none';
      const register =
        settings.runtime === 'runsc'
          ? ' add {"runtimes":{"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--network=none"]}}} to /etc/docker/daemon.json (apt-get install runsc) and restart dockerd'
          : ` register it under "runtimes" in /etc/docker/daemon.json and restart dockerd`;
      throw new ConfigError(`--runtime ${settings.runtime} is not registered with the Docker daemon (it knows: ${known}); to use it,${register}`);
    }
  }
  if (!BUILTIN_NETWORKS.has(settings.network)) {
    try {
      await dockerCall(docker.getNetwork(settings.network).inspect(), 'docker network inspect');
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) {
        throw new ConfigError(`--network ${settings.network}: no such Docker network (see \`docker network ls\`); use none or bridge`);
      }
      throw err;
    }
  }
}
