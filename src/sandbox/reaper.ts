import type Docker from 'dockerode';
import { errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { docker as dockerCall } from './deadline.js';
import { RUN_LABEL, ownerAlive } from './labels.js';

const log = createLogger('reaper');

/** A sandloop container or volume as a reaper sees it. */
export interface Leftover {
  kind: 'container' | 'volume';
  /** Container id, or volume name. */
  id: string;
  runId: string;
  state: string;
  labels: Record<string, string>;
}

/** Every container labelled with this run id, or with any run id. */
export async function listRunContainers(docker: Docker, runId?: string): Promise<Leftover[]> {
  const label = runId ? `${RUN_LABEL}=${runId}` : RUN_LABEL;
  const found = await dockerCall(docker.listContainers({ all: true, filters: { label: [label] } }), 'docker list containers');
  return found.map((c) => ({ kind: 'container' as const, id: c.Id, runId: c.Labels[RUN_LABEL] ?? '', state: c.State, labels: c.Labels }));
}

/** Every volume labelled with this run id, or with any run id. */
export async function listRunVolumes(docker: Docker, runId?: string): Promise<Leftover[]> {
  const label = runId ? `${RUN_LABEL}=${runId}` : RUN_LABEL;
  const found = await dockerCall(docker.listVolumes({ filters: { label: [label] } }), 'docker list volumes');
  return (found.Volumes ?? []).map((v) => ({ kind: 'volume' as const, id: v.Name, runId: v.Labels?.[RUN_LABEL] ?? '', state: 'volume', labels: v.Labels ?? {} }));
}

/** Remove a leftover of either kind; one already gone is fine. */
export async function removeLeftover(docker: Docker, leftover: Leftover): Promise<void> {
  if (leftover.kind === 'container') return removeContainer(docker, leftover.id);
  try {
    await dockerCall(docker.getVolume(leftover.id).remove({ force: true }), `docker volume remove ${leftover.id}`);
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 404) throw err;
  }
}

/**
 * Force-remove every container labelled with this run id. Cleanup goes by
 * label, never by object lifetime, so it also finds containers whose create
 * call we never saw finish. Returns the ids removed.
 */
export async function removeRunContainers(docker: Docker, runId: string): Promise<string[]> {
  const found = await listRunContainers(docker, runId);
  await Promise.all(found.map((c) => removeContainer(docker, c.id)));
  const volumes = await listRunVolumes(docker, runId);
  await Promise.all(volumes.map((v) => removeLeftover(docker, v)));
  return [...found, ...volumes].map((c) => c.id);
}

/** Containers and volumes whose owning sandloop process on this host is gone (crashed, or killed with -9). */
export async function findOrphans(docker: Docker): Promise<Leftover[]> {
  const all = [...(await listRunContainers(docker)), ...(await listRunVolumes(docker))];
  return all.filter((c) => !ownerAlive(c.labels));
}

/** Remove leftovers: containers first, since a volume in use cannot go. */
export async function removeLeftovers(docker: Docker, leftovers: Leftover[]): Promise<void> {
  await Promise.all(leftovers.filter((l) => l.kind === 'container').map((l) => removeLeftover(docker, l)));
  await Promise.all(leftovers.filter((l) => l.kind === 'volume').map((l) => removeLeftover(docker, l)));
}

/** The start-up sweep: remove what dead runs left behind. Never fails the caller. */
export async function sweepOrphans(docker: Docker): Promise<string[]> {
  try {
    const orphans = await findOrphans(docker);
    await removeLeftovers(docker, orphans);
    if (orphans.length) log(`removed ${orphans.length} containers and volumes left by dead runs`);
    return orphans.map((c) => c.id);
  } catch (err) {
    log(`start-up sweep failed: ${errorMessage(err)}`);
    return [];
  }
}

/** Force-remove one container; a container that is already gone is fine. */
export async function removeContainer(docker: Docker, id: string): Promise<void> {
  log(`${id.slice(0, 12)} removing...`);
  try {
    await dockerCall(docker.getContainer(id).remove({ force: true, v: true }), `docker remove ${id.slice(0, 12)}`);
    log(`${id.slice(0, 12)} removed`);
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode;
    // 404: already gone (auto-removed); 409: a removal is already in progress.
    if (status === 404 || status === 409) return;
    throw err;
  }
}
