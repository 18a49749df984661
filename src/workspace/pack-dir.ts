import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, lstatSync, openSync, readFileSync, readSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import ignore, { type Ignore } from 'ignore';
import { pack } from 'tar-stream';

/** One path of the task dir as it was copied in. */
export interface ManifestEntry {
  /** Relative path with forward slashes; directories end without a slash. */
  path: string;
  type: 'file' | 'dir' | 'symlink';
  mode: number;
  size: number;
  /** sha256 of a file's content, or of a symlink's target. */
  hash?: string;
}

export interface PackPlan {
  entries: ManifestEntry[];
  /** What was left out, with why: `node_modules/ (.gitignore)`, `*.log (--exclude)`, `sock (a socket)`. */
  excluded: string[];
  bytes: number;
}

export interface PackOptions {
  /** gitignore-style patterns, from --exclude. */
  excludes?: string[];
  /** Honour .gitignore files (root and nested). Default true. */
  gitignore?: boolean;
}

/**
 * Walk the task dir once, deciding what goes into the copy: --exclude
 * patterns and .gitignore rules leave paths out (and are reported); sockets,
 * FIFOs and devices are never copied.
 */
export function planPack(root: string, options: PackOptions = {}): PackPlan {
  const entries: ManifestEntry[] = [];
  const excluded: string[] = [];
  const user = ignore().add(options.excludes ?? []);
  let bytes = 0;
  const walk = (dir: string, rules: { base: string; ig: Ignore }[]) => {
    const local = options.gitignore !== false ? gitignoreAt(dir) : undefined;
    const scoped = local ? [...rules, { base: dir, ig: local }] : rules;
    for (const name of readdirSync(dir).sort()) {
      const abs = join(dir, name);
      const rel = relative(root, abs).split(sep).join('/');
      const st = lstatSync(abs);
      const probe = st.isDirectory() ? `${rel}/` : rel;
      if (user.ignores(probe)) {
        excluded.push(`${probe} (--exclude)`);
        continue;
      }
      const rule = scoped.find(({ base, ig }) => ig.ignores(relative(base, abs).split(sep).join('/') + (st.isDirectory() ? '/' : '')));
      if (rule && name !== '.gitignore') {
        excluded.push(`${probe} (.gitignore)`);
        continue;
      }
      const entry = describe(abs, rel, st);
      if (!entry) {
        excluded.push(`${rel} (${kind(st)}: not copied)`);
        continue;
      }
      entries.push(entry);
      bytes += entry.size;
      if (entry.type === 'dir') walk(abs, scoped);
    }
  };
  walk(root, []);
  return { entries, excluded, bytes };
}

/**
 * A tar stream of the planned entries under `workspace/`, with the root
 * directory's own mode and owner, so that extracting it at `/` of a helper
 * container fills a volume mounted at /workspace and sets its ownership.
 */
export function packPlan(root: string, plan: PackPlan): Readable {
  const tar = pack();
  const rootStat = lstatSync(root);
  const owner = { uid: rootStat.uid, gid: rootStat.gid };
  void (async () => {
    try {
      tar.entry({ name: 'workspace', type: 'directory', mode: rootStat.mode & 0o7777, mtime: rootStat.mtime, ...owner });
      for (const e of plan.entries) {
        const abs = join(root, e.path);
        const st = lstatSync(abs);
        const header = { name: `workspace/${e.path}`, mode: st.mode & 0o7777, mtime: st.mtime, uid: st.uid, gid: st.gid };
        if (e.type === 'dir') tar.entry({ ...header, type: 'directory' });
        else if (e.type === 'symlink') tar.entry({ ...header, type: 'symlink', linkname: readlinkSync(abs) });
        else {
          await new Promise<void>((resolve, reject) => {
            const sink = tar.entry({ ...header, type: 'file', size: st.size }, (err) => (err ? reject(err) : resolve()));
            createReadStream(abs).on('error', reject).pipe(sink);
          });
        }
      }
      tar.finalize();
    } catch (err) {
      tar.destroy(err as Error);
    }
  })();
  return tar as unknown as Readable;
}

function describe(abs: string, rel: string, st: Stats): ManifestEntry | undefined {
  const mode = st.mode & 0o7777;
  if (st.isDirectory()) return { path: rel, type: 'dir', mode, size: 0 };
  if (st.isSymbolicLink()) return { path: rel, type: 'symlink', mode, size: 0, hash: sha256(readlinkSync(abs)) };
  if (st.isFile()) return { path: rel, type: 'file', mode, size: st.size, hash: hashFile(abs) };
  return undefined;
}

function kind(st: Stats): string {
  if (st.isSocket()) return 'a socket';
  if (st.isFIFO()) return 'a FIFO';
  return 'a device';
}

function gitignoreAt(dir: string): Ignore | undefined {
  const file = join(dir, '.gitignore');
  return existsSync(file) ? ignore().add(readFileSync(file, 'utf8')) : undefined;
}

export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** sha256 of a file, read in 1 MiB chunks so a big file never sits in memory whole. */
export function hashFile(path: string): string {
  const hash = createHash('sha256');
  const buf = Buffer.alloc(1 << 20);
  const fd = openSync(path, 'r');
  try {
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) hash.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}
