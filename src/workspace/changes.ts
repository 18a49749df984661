import { closeSync, existsSync, lstatSync, openSync, readFileSync, readSync, readdirSync, readlinkSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { structuredPatch } from 'diff';
import { type ManifestEntry, type PackPlan, hashFile, sha256 } from './pack-dir.js';

import type { WorkspaceChanges } from '../types.js';

interface Snapshot {
  type: 'file' | 'symlink';
  mode: number;
  hash: string;
}

/** Files and symlinks under `dir` (a finished workspace), by relative path. */
export function snapshotDir(dir: string): Map<string, Snapshot> {
  const out = new Map<string, Snapshot>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const abs = join(d, name);
      const st = lstatSync(abs);
      const rel = relative(dir, abs).split(sep).join('/');
      if (st.isDirectory()) walk(abs);
      else if (st.isSymbolicLink()) out.set(rel, { type: 'symlink', mode: 0o120000, hash: sha256(readlinkSync(abs)) });
      else if (st.isFile()) out.set(rel, { type: 'file', mode: st.mode & 0o777, hash: hashFile(abs) });
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

function snapshotOfPlan(plan: PackPlan): Map<string, Snapshot> {
  const out = new Map<string, Snapshot>();
  for (const e of plan.entries) {
    if (e.type === 'file') out.set(e.path, { type: 'file', mode: e.mode & 0o777, hash: e.hash! });
    if (e.type === 'symlink') out.set(e.path, { type: 'symlink', mode: 0o120000, hash: e.hash! });
  }
  return out;
}

export function computeChanges(plan: PackPlan, finalDir: string): WorkspaceChanges {
  const before = snapshotOfPlan(plan);
  const after = snapshotDir(finalDir);
  const changes: WorkspaceChanges = { added: [], modified: [], deleted: [], binary: [] };
  for (const [path, b] of before) {
    const a = after.get(path);
    if (!a) changes.deleted.push(path);
    else if (a.hash !== b.hash || a.mode !== b.mode || a.type !== b.type) changes.modified.push(path);
  }
  for (const path of after.keys()) if (!before.has(path)) changes.added.push(path);
  for (const list of [changes.added, changes.modified, changes.deleted]) list.sort();
  return changes;
}

/** Paths whose content in the task dir no longer matches what was copied in. */
export function changedSinceCopy(taskDir: string, plan: PackPlan): string[] {
  const now = snapshotDir(taskDir);
  const changed: string[] = [];
  for (const e of plan.entries) {
    if (e.type === 'dir') continue;
    const s = now.get(e.path);
    if (!s || s.hash !== e.hash) changed.push(e.path);
  }
  return changed;
}

/**
 * A unified diff in git's format, so `git apply` (or `patch -p1`) takes it.
 * `original` is where the old contents are read (the task dir); binary files
 * are listed in a comment at the top and in `changes.binary`, not diffed.
 */
export function unifiedPatch(changes: WorkspaceChanges, original: string, final: string, plan: PackPlan): string {
  const modes = new Map<string, ManifestEntry>(plan.entries.map((e) => [e.path, e]));
  const parts: string[] = [];
  const all = [...changes.added.map((p) => ['added', p]), ...changes.modified.map((p) => ['modified', p]), ...changes.deleted.map((p) => ['deleted', p])].sort((x, y) =>
    x[1]!.localeCompare(y[1]!),
  ) as ['added' | 'modified' | 'deleted', string][];
  for (const [kind, path] of all) {
    const oldSide = kind === 'added' ? undefined : readSide(join(original, path), modes.get(path)?.type === 'symlink');
    const newSide = kind === 'deleted' ? undefined : readSide(join(final, path));
    if (oldSide?.binary || newSide?.binary) {
      changes.binary.push(path);
      continue;
    }
    const oldMode = oldSide ? modeString(oldSide.mode) : undefined;
    const newMode = newSide ? modeString(newSide.mode) : undefined;
    const head = [`diff --git a/${path} b/${path}`];
    if (kind === 'added') head.push(`new file mode ${newMode}`);
    else if (kind === 'deleted') head.push(`deleted file mode ${oldMode}`);
    else if (oldMode !== newMode) head.push(`old mode ${oldMode}`, `new mode ${newMode}`);
    const oldText = oldSide?.text ?? '';
    const newText = newSide?.text ?? '';
    if (oldText !== newText) {
      const patch = structuredPatch(`a/${path}`, `b/${path}`, oldText, newText, '', '', { context: 3 });
      head.push(kind === 'added' ? '--- /dev/null' : `--- a/${path}`, kind === 'deleted' ? '+++ /dev/null' : `+++ b/${path}`);
      for (const h of patch.hunks) {
        head.push(`@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@`, ...h.lines);
      }
    } else if (kind === 'modified' && oldMode === newMode) {
      continue; // nothing git can express (e.g. only the mtime changed)
    }
    parts.push(`${head.join('\n')}\n`);
  }
  changes.binary.sort();
  const note = changes.binary.length ? `# Binary files changed (not diffed): ${changes.binary.join(', ')}\n` : '';
  return note + parts.join('');
}

function range(start: number, lines: number): string {
  // An empty side names the line before it (a new file is "-0,0"), as git and jsdiff's own formatter write it.
  if (lines === 0) return `${Math.max(0, start - 1)},0`;
  return lines === 1 ? `${start}` : `${start},${lines}`;
}

function modeString(mode: number): string {
  if (mode === 0o120000) return '120000';
  return mode & 0o111 ? '100755' : '100644';
}

function readSide(path: string, wasSymlink = false): { text?: string; mode: number; binary: boolean } | undefined {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st) return undefined;
  if (st.isSymbolicLink() || wasSymlink) return { text: st.isSymbolicLink() ? readlinkSync(path) : readFileSync(path, 'utf8'), mode: 0o120000, binary: false };
  if (isBinary(path)) return { mode: st.mode, binary: true };
  return { text: readFileSync(path, 'utf8'), mode: st.mode, binary: false };
}

/** git's heuristic (a NUL byte in the first 8000 bytes), plus content that is not UTF-8, which a text diff would mangle. */
function isBinary(path: string): boolean {
  const buf = Buffer.alloc(8000);
  const fd = openSync(path, 'r');
  let n: number;
  try {
    n = readSync(fd, buf, 0, buf.length, 0);
  } finally {
    closeSync(fd);
  }
  if (buf.subarray(0, n).includes(0)) return true;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(path));
    return false;
  } catch {
    return true;
  }
}
