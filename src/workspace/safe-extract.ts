import { createWriteStream } from 'node:fs';
import { chmod, link, lstat, mkdir, rm, symlink, utimes } from 'node:fs/promises';
import { dirname, isAbsolute, normalize, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar-stream';

import type { Rejected } from '../types.js';

export interface ExtractReport {
  files: number;
  bytes: number;
  /** Entries refused and skipped, never written. */
  rejected: Rejected[];
}

export interface ExtractOptions {
  /** Leading path component every entry must carry (e.g. `workspace`); it is removed. */
  strip: string;
  /** Stop writing file content past this many bytes in total. */
  maxBytes: number;
}

/**
 * Extract an untrusted tar stream into `dest`. Refused (reported and skipped,
 * never written): absolute paths, `..`, symlinks and hardlinks whose targets
 * leave `dest`, device files and FIFOs, paths through a symlink, and file
 * content past `maxBytes` in total. Every entry is drained, even a skipped one.
 * Files are written as the invoking user, with the entry's permission bits.
 */
export async function extractSafely(tar: Readable, dest: string, options: ExtractOptions): Promise<ExtractReport> {
  const root = resolve(dest);
  // Always a fresh, empty directory: leftovers of an earlier run could be symlinks pointing anywhere.
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  const report: ExtractReport = { files: 0, bytes: 0, rejected: [] };
  const ex = extract();
  ex.on('entry', (header, stream, next) => {
    const done = (err?: Error) => (err ? next(err) : next());
    const skip = (path: string, reason: string) => {
      report.rejected.push({ path, reason });
      stream.on('end', () => done()).resume();
    };
    const name = header.name;
    if (isAbsolute(name)) return skip(name, 'absolute path');
    if (name.split('/').includes('..')) return skip(name, "path contains '..'");
    const rel = stripPrefix(name, options.strip);
    if (rel === undefined) return skip(name, 'outside the workspace directory of the archive');
    if (rel === '') return stream.on('end', () => done()).resume(); // the root itself
    const target = resolve(root, rel);
    if (!target.startsWith(root + sep)) return skip(rel, 'leaves the output directory');

    void (async () => {
      if (await throughSymlink(root, target)) return skip(rel, 'a parent directory is a symlink');
      switch (header.type) {
        case 'directory':
          await mkdir(target, { recursive: true });
          await chmod(target, (header.mode ?? 0o755) | 0o700);
          stream.resume();
          stream.on('end', () => done());
          return;
        case 'file':
        case 'contiguous-file': {
          const size = header.size ?? 0;
          if (report.bytes + size > options.maxBytes) return skip(rel, `would pass --workspace-max (${options.maxBytes} bytes in total)`);
          await mkdir(dirname(target), { recursive: true });
          // 'wx': never write through whatever is already at the path (a planted symlink, say).
          await pipeline(stream, createWriteStream(target, { flags: 'wx', mode: (header.mode ?? 0o644) & 0o777 }));
          await chmod(target, (header.mode ?? 0o644) & 0o777);
          if (header.mtime) await utimes(target, header.mtime, header.mtime).catch(() => {});
          report.files++;
          report.bytes += size;
          return done();
        }
        case 'symlink': {
          const link = header.linkname ?? '';
          const resolved = isAbsolute(link) ? undefined : resolve(dirname(target), link);
          if (!resolved || !(resolved === root || resolved.startsWith(root + sep))) {
            return skip(rel, `symlink to ${link} leaves the output directory`);
          }
          // `..` after a name could climb out through another symlink (`d/../..` where d is a link): only leading `..` is safe.
          if (climbsAfterName(link)) {
            return skip(rel, `symlink to ${link} has '..' after a name`);
          }
          await mkdir(dirname(target), { recursive: true });
          await symlink(link, target);
          stream.resume();
          stream.on('end', () => done());
          return;
        }
        case 'link': {
          const other = header.linkname && !header.linkname.split('/').includes('..') ? stripPrefix(header.linkname, options.strip) : undefined;
          const source = other ? resolve(root, other) : undefined;
          if (!source || !source.startsWith(root + sep)) return skip(rel, `hardlink to ${header.linkname ?? '?'} leaves the output directory`);
          await mkdir(dirname(target), { recursive: true });
          await link(source, target);
          stream.resume();
          stream.on('end', () => done());
          return;
        }
        default:
          return skip(rel, `${header.type} entries (devices, FIFOs) are not extracted`);
      }
    })().catch((err: Error) => {
      report.rejected.push({ path: rel, reason: `could not write: ${err.message}` });
      stream.resume();
      stream.on('end', () => done());
    });
  });
  await pipeline(tar, ex);
  return report;
}

/** Does a link target use `..` after a name (`a/..`), where the name could itself be a symlink? */
function climbsAfterName(link: string): boolean {
  let named = false;
  for (const part of link.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..' && named) return true;
    if (part !== '..') named = true;
  }
  return false;
}

function stripPrefix(name: string, prefix: string): string | undefined {
  const clean = normalize(name).replace(/^\.\//, '').replace(/\/+$/, '');
  if (clean === prefix) return '';
  return clean.startsWith(`${prefix}/`) ? clean.slice(prefix.length + 1) : undefined;
}

/** Does any existing parent of `target` below `root` resolve through a symlink? */
async function throughSymlink(root: string, target: string): Promise<boolean> {
  let dir = dirname(target);
  while (dir.startsWith(root + sep)) {
    const st = await lstat(dir).catch(() => undefined);
    if (st?.isSymbolicLink()) return true;
    dir = dirname(dir);
  }
  return false;
}

