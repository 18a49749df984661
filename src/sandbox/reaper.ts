import type Docker from 'dockerode';
import { errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { docker as dockerCall } from './deadline.js';
import { RUN_LABEL, ownerAlive } from './labels.js';

const log = createLogger('reaper');

/** A sandloop container as a reaper sees it. */
export interface Leftover {
  id: string;
  runId: string;
  state: string;
  labels: Record<string, string>;
}

/** Every container labelled with this run id, or with any run id. */
export async function listRunContainers(docker: Docker, runId?: string): Promise<Leftover[]> {
  const label = runId ? `${RUN_LABEL}=${runId}` : RUN_LABEL;
  const found = await dockerCall(docker.listContainers({ all: true, filters: { label: [label] } }), 'docker list containers');
  return found.map((c) => ({ id: c.Id, runId: c.Labels[RUN_LABEL] ?? '', state: c.State, labels: c.Labels }));
}

/**
 * Force-remove every container labelled with this run id. Cleanup goes by
 * label, never by object lifetime, so it also finds containers whose create
 * call we never saw finish. Returns the ids removed.
 */
export async function removeRunContainers(docker: Docker, runId: string): Promise<string[]> {
  const found = await listRunContainers(docker, runId);
  await Promise.all(found.map((c) => removeContainer(docker, c.id)));
  return found.map((c) => c.id);
}

/** Containers whose owning sandloop process on this host is gone (crashed, or killed with -9). */
export async function findOrphans(docker: Docker): Promise<Leftover[]> {
  return (await listRunContainers(docker)).filter((c) => !ownerAlive(c.labels));
}

/** The start-up sweep: remove what dead runs left behind. Never fails the caller. */
export async function sweepOrphans(docker: Docker): Promise<string[]> {
  try {
    const orphans = await findOrphans(docker);
    await Promise.all(orphans.map((c) => removeContainer(docker, c.id)));
    if (orphans.length) log(`removed ${orphans.length} containers left by dead runs`);
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
