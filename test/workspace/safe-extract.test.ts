import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { extractSafely } from '../../src/workspace/safe-extract.js';

type Entry = { name: string; type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo'; body?: string; linkname?: string; mode?: number };

function tarOf(entries: Entry[]): Readable {
  const p = pack();
  for (const e of entries) {
    const { body, ...header } = e;
    p.entry({ type: 'file', mode: 0o644, ...header }, body ?? '');
  }
  p.finalize();
  return p as unknown as Readable;
}

describe('extractSafely', () => {
  it('writes good entries and refuses, reports and skips every dangerous one', async () => {
    const dest = mkdtempSync(join(tmpdir(), 'sandloop-extract-'));
    const outside = mkdtempSync(join(tmpdir(), 'sandloop-outside-'));
    const report = await extractSafely(
      tarOf([
        { name: 'workspace/', type: 'directory', mode: 0o755 },
        { name: 'workspace/ok.txt', body: 'fine\n' },
        { name: 'workspace/bin/run.sh', body: '#!/bin/sh\n', mode: 0o755 },
        { name: 'workspace/..evil', body: 'a dotted name is fine\n' },
        { name: 'workspace/link-inside', type: 'symlink', linkname: 'ok.txt' },
        { name: '/etc/cron.d/pwn', body: 'x' },
        { name: 'workspace/../../escape.txt', body: 'x' },
        { name: 'workspace/abs-link', type: 'symlink', linkname: '/etc/passwd' },
        { name: 'workspace/rel-link', type: 'symlink', linkname: '../../../etc/shadow' },
        { name: 'workspace/hard', type: 'link', linkname: `${outside}/x` },
        { name: 'workspace/hard-ok', type: 'link', linkname: 'workspace/ok.txt' },
        { name: 'workspace/dev', type: 'character-device' },
        { name: 'workspace/pipe', type: 'fifo' },
        { name: 'workspace/dir-link', type: 'symlink', linkname: '.' },
        { name: 'workspace/dir-link/through.txt', body: 'x' },
        { name: 'workspace/big.bin', body: 'y'.repeat(2000) },
        { name: 'workspace/a/b/c/', type: 'directory' },
        { name: 'workspace/a/b/c/d', type: 'symlink', linkname: '../../..' },
        { name: 'workspace/chain', type: 'symlink', linkname: 'a/b/c/d/../../../..' },
        { name: 'workspace/up-ok', type: 'symlink', linkname: 'a/b' },
        { name: 'other/top.txt', body: 'x' },
      ]),
      dest,
      { strip: 'workspace', maxBytes: 1000 },
    );
    expect(readFileSync(join(dest, 'ok.txt'), 'utf8')).toBe('fine\n');
    expect(lstatSync(join(dest, 'bin/run.sh')).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(dest, '..evil'), 'utf8')).toBe('a dotted name is fine\n');
    expect(readlinkSync(join(dest, 'link-inside'))).toBe('ok.txt');
    expect(readFileSync(join(dest, 'hard-ok'), 'utf8')).toBe('fine\n');
    expect(Object.fromEntries(report.rejected.map((r) => [r.path, r.reason]))).toEqual({
      '/etc/cron.d/pwn': 'absolute path',
      'workspace/../../escape.txt': "path contains '..'",
      'abs-link': 'symlink to /etc/passwd leaves the output directory',
      'rel-link': 'symlink to ../../../etc/shadow leaves the output directory',
      hard: `hardlink to ${outside}/x leaves the output directory`,
      dev: 'character-device entries (devices, FIFOs) are not extracted',
      pipe: 'fifo entries (devices, FIFOs) are not extracted',
      'dir-link/through.txt': 'a parent directory is a symlink',
      'big.bin': 'would pass --workspace-max (1000 bytes in total)',
      'other/top.txt': 'outside the workspace directory of the archive',
      chain: "symlink to a/b/c/d/../../../.. has '..' after a name",
    });
    for (const p of ['abs-link', 'rel-link', 'hard', 'dev', 'pipe', 'big.bin']) expect(existsSync(join(dest, p))).toBe(false);
    expect(existsSync(join(dest, '..', 'escape.txt'))).toBe(false);
    expect(report.files).toBe(3);
  });
});
