import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync, existsSync, cpSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApplyRefusedError } from '../../src/errors.js';
import { applyChanges } from '../../src/workspace/apply-changes.js';
import { computeChanges } from '../../src/workspace/changes.js';
import { planPack } from '../../src/workspace/pack-dir.js';

/** A task dir, its plan, and a finished workspace made from it by `change`. */
function setup(build: (dir: string) => void, change: (ws: string) => void) {
  const root = mkdtempSync(join(tmpdir(), 'sandloop-apply-'));
  const task = join(root, 'task');
  mkdirSync(task);
  build(task);
  const plan = planPack(task);
  const ws = join(root, 'out', 'workspace');
  mkdirSync(join(root, 'out'));
  cpSync(task, ws, { recursive: true, verbatimSymlinks: true });
  for (const e of planPack(task, { gitignore: false }).entries) if (!plan.entries.some((p) => p.path === e.path)) rmSync(join(ws, e.path), { recursive: true, force: true });
  change(ws);
  return { root, task, ws, plan, changes: computeChanges(plan, ws) };
}

describe('applyChanges', () => {
  it('applies additions, edits, deletions and a directory that became a file', () => {
    const t = setup(
      (d) => {
        writeFileSync(join(d, 'a.txt'), 'a');
        mkdirSync(join(d, 'docs'));
        writeFileSync(join(d, 'docs', 'x.md'), 'x');
      },
      (ws) => {
        writeFileSync(join(ws, 'a.txt'), 'A');
        writeFileSync(join(ws, 'new.txt'), 'new');
        rmSync(join(ws, 'docs'), { recursive: true });
        writeFileSync(join(ws, 'docs'), 'flat');
      },
    );
    applyChanges(t.task, t.ws, t.changes, t.plan);
    expect(readFileSync(join(t.task, 'a.txt'), 'utf8')).toBe('A');
    expect(readFileSync(join(t.task, 'new.txt'), 'utf8')).toBe('new');
    expect(readFileSync(join(t.task, 'docs'), 'utf8')).toBe('flat');
  });

  it('refuses, writing nothing, to overwrite a file that was never copied in (a gitignored .env)', () => {
    const t = setup(
      (d) => {
        writeFileSync(join(d, '.gitignore'), '.env\n');
        writeFileSync(join(d, '.env'), 'SECRET=real\n');
        writeFileSync(join(d, 'a.txt'), 'a');
      },
      (ws) => {
        writeFileSync(join(ws, '.env'), 'SECRET=placeholder\n');
        writeFileSync(join(ws, 'a.txt'), 'changed');
      },
    );
    expect(() => applyChanges(t.task, t.ws, t.changes, t.plan)).toThrow(ApplyRefusedError);
    expect(() => applyChanges(t.task, t.ws, t.changes, t.plan)).toThrow(/\.env exists in the task dir but was not copied in/);
    expect(readFileSync(join(t.task, '.env'), 'utf8')).toBe('SECRET=real\n');
    expect(readFileSync(join(t.task, 'a.txt'), 'utf8')).toBe('a');
  });

  it('refuses paths that go through a symlink in the task dir', () => {
    const outside = mkdtempSync(join(tmpdir(), 'sandloop-outside-'));
    const t = setup(
      (d) => symlinkSync(outside, join(d, 'shared')),
      (ws) => {
        rmSync(join(ws, 'shared'));
        mkdirSync(join(ws, 'shared'));
        writeFileSync(join(ws, 'shared', 'evil'), 'PWNED');
      },
    );
    expect(() => applyChanges(t.task, t.ws, t.changes, t.plan)).toThrow(/shared\/evil goes through the symlink shared/);
    expect(existsSync(join(outside, 'evil'))).toBe(false);
  });
});
