import { chmodSync, copyFileSync, lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ApplyRefusedError } from '../errors.js';
import type { WorkspaceChanges } from '../types.js';
import { changedSinceCopy } from './changes.js';
import type { PackPlan } from './pack-dir.js';

/**
 * Bring the agent's changes into the task dir: added and modified paths are
 * copied from the finished workspace, deleted ones removed. Refused when the
 * task dir changed since it was copied in, so nothing of yours is overwritten.
 */
export function applyChanges(taskDir: string, finalDir: string, changes: WorkspaceChanges, plan: PackPlan): void {
  const changed = changedSinceCopy(taskDir, plan);
  if (changed.length > 0) {
    const list = changed.slice(0, 5).join(', ') + (changed.length > 5 ? ` and ${changed.length - 5} more` : '');
    throw new ApplyRefusedError(`--apply refused: the task dir changed during the run (${list}); the agent's changes are in ${dirname(finalDir)}`);
  }
  for (const path of [...changes.added, ...changes.modified]) {
    const from = join(finalDir, path);
    const to = join(taskDir, path);
    mkdirSync(dirname(to), { recursive: true });
    rmSync(to, { force: true, recursive: false });
    const st = lstatSync(from);
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
    else {
      copyFileSync(from, to);
      chmodSync(to, st.mode & 0o7777);
    }
  }
  for (const path of changes.deleted) rmSync(join(taskDir, path), { force: true });
}
