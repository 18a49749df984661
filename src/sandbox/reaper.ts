import type Docker from 'dockerode';
import { createLogger } from '../log.js';
import { withDeadline } from './deadline.js';
import { RUN_LABEL } from './labels.js';

const log = createLogger('reaper');
const REMOVE_MS = 30_000;

/**
 * Force-remove every container labelled with this run id (or, with no id,
 * every sandloop container). Cleanup goes by label, never by object lifetime,
 * so it also finds containers whose create call we never saw finish.
 * Returns the ids removed.
 */
export async function removeRunContainers(docker: Docker, runId?: string): Promise<string[]> {
  const label = runId ? `${RUN_LABEL}=${runId}` : RUN_LABEL;
  const found = await withDeadline(docker.listContainers({ all: true, filters: { label: [label] } }), REMOVE_MS, 'docker list containers');
  await Promise.all(found.map((c) => removeContainer(docker, c.Id)));
  return found.map((c) => c.Id);
}

/** Force-remove one container; a container that is already gone is fine. */
export async function removeContainer(docker: Docker, id: string): Promise<void> {
  log(`${id.slice(0, 12)} removing...`);
  try {
    await withDeadline(docker.getContainer(id).remove({ force: true, v: true }), REMOVE_MS, `docker remove ${id.slice(0, 12)}`);
    log(`${id.slice(0, 12)} removed`);
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return;
    // 409: a removal of this container is already in progress.
    if ((err as { statusCode?: number }).statusCode === 409) return;
    throw err;
  }
}
