import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planPack } from '../../src/workspace/pack-dir.js';

describe('planPack', () => {
  it('leaves out --exclude patterns, root and nested .gitignore rules, and special files, saying why', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandloop-plan-'));
    writeFileSync(join(dir, '.gitignore'), 'dist/\n');
    writeFileSync(join(dir, 'keep.txt'), 'keep');
    writeFileSync(join(dir, 'secret.env'), 'x');
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist', 'bundle.js'), 'x');
    mkdirSync(join(dir, 'pkg'));
    writeFileSync(join(dir, 'pkg', '.gitignore'), '*.tmp\n');
    writeFileSync(join(dir, 'pkg', 'a.tmp'), 'x');
    writeFileSync(join(dir, 'pkg', 'a.py'), 'print(1)');
    symlinkSync('keep.txt', join(dir, 'link'));
    const server = net.createServer().listen(join(dir, 'app.sock'));
    await new Promise((r) => server.once('listening', r));
    const plan = planPack(dir, { excludes: ['*.env'] });
    const unfiltered = planPack(dir, { gitignore: false });
    server.close();
    expect(plan.entries.map((e) => `${e.type}:${e.path}`)).toEqual([
      'file:.gitignore',
      'file:keep.txt',
      'symlink:link',
      'dir:pkg',
      'file:pkg/.gitignore',
      'file:pkg/a.py',
    ]);
    expect(plan.excluded).toEqual(['app.sock (a socket: not copied)', 'dist/ (.gitignore)', 'pkg/a.tmp (.gitignore)', 'secret.env (--exclude)']);
    expect(plan.bytes).toBe(6 + 4 + 6 + 8);
    expect(unfiltered.excluded).toEqual(['app.sock (a socket: not copied)']);
  });
});
