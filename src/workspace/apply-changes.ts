import { chmodSync, copyFileSync, lstatSync, mkdirSync, readdirSync, readlinkSync, rmSync, rmdirSync, symlinkSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { ApplyRefusedError } from '../errors.js';
import type { WorkspaceChanges } from '../types.js';
import { changedSinceCopy } from './changes.js';
import type { PackPlan } from './pack-dir.js';

/**
 * Bring the agent's changes into the task dir: deleted paths are removed,
 * added and modified ones copied from the finished workspace. Everything is
 * checked before anything is written, and the whole apply is refused when:
 * - the task dir changed since it was copied in;
 * - a path would overwrite something that was never copied in (gitignored or
 *   excluded files, e.g. a `.env` or `node_modules/`);
 * - a path goes through a symlink in the task dir (it could lead outside);
 * - a directory would have to become a file.
 * So nothing of yours is overwritten, and nothing outside the task dir is touched.
 */
export function applyChanges(taskDir: string, finalDir: string, changes: WorkspaceChanges, plan: PackPlan): void {
  const refuse = (why: string[]) => {
    const list = why.slice(0, 5).join('; ') + (why.length > 5 ? `; and ${why.length - 5} more` : '');
    throw new ApplyRefusedError(`--apply refused: ${list}; the agent's changes are in ${dirname(finalDir)}`);
  };
  const changed = changedSinceCopy(taskDir, plan);
  if (changed.length > 0) refuse([`the task dir changed during the run (${changed.join(', ')})`]);

  const copied = new Set(plan.entries.map((e) => e.path));
  const deleted = new Set(changes.deleted);
  const problems: string[] = [];
  for (const path of [...changes.added, ...changes.modified, ...changes.deleted]) {
    const link = symlinkOnTheWay(taskDir, path);
    if (link) problems.push(`${path} goes through the symlink ${link}`);
  }
  for (const path of changes.added) {
    const here = lstatSync(join(taskDir, path), { throwIfNoEntry: false });
    if (here && !copied.has(path)) problems.push(`${path} exists in the task dir but was not copied in`);
    if (here?.isDirectory() && filesUnder(taskDir, path).some((p) => !deleted.has(p))) problems.push(`${path} is a directory in the task dir that is not empty`);
  }
  if (problems.length > 0) refuse(problems);

  // Deletions first, so that a file can replace a directory the agent emptied, and the other way round.
  for (const path of changes.deleted) rmSync(join(taskDir, path), { force: true });
  for (const path of [...changes.deleted].sort().reverse()) removeEmptyParents(taskDir, path, copied);
  for (const path of [...changes.added, ...changes.modified]) {
    const from = join(finalDir, path);
    const to = join(taskDir, path);
    mkdirSync(dirname(to), { recursive: true });
    const existing = lstatSync(to, { throwIfNoEntry: false });
    if (existing?.isDirectory()) rmdirSync(to);
    else if (existing) rmSync(to);
    const st = lstatSync(from);
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
    else {
      copyFileSync(from, to);
      chmodSync(to, st.mode & 0o7777);
    }
  }
}

/** Files and symlinks below `dir` (relative to `root`), without following links. */
function filesUnder(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const rel = `${dir}/${name}`;
    if (lstatSync(join(root, rel)).isDirectory()) out.push(...filesUnder(root, rel));
    else out.push(rel);
  }
  return out;
}

/** The first existing parent of `path` inside `root` that is a symlink, if any. */
function symlinkOnTheWay(root: string, path: string): string | undefined {
  const parts = path.split('/');
  for (let i = 1; i < parts.length; i++) {
    const prefix = parts.slice(0, i).join('/');
    if (lstatSync(join(root, prefix), { throwIfNoEntry: false })?.isSymbolicLink()) return prefix;
  }
  return undefined;
}

/** Remove directories the deletions emptied, if they were copied in (never one that holds anything else). */
function removeEmptyParents(root: string, path: string, copied: Set<string>): void {
  for (let dir = dirname(path); dir !== '.' && copied.has(dir); dir = dirname(dir)) {
    const abs = join(root, dir);
    if (!abs.startsWith(root + sep)) return;
    try {
      if (readdirSync(abs).length > 0) return;
      rmdirSync(abs);
    } catch {
      return;
    }
  }
}
