import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** A hash of a directory tree: every path, type, mode, owner, content and link target. */
export function treeHash(dir: string): string {
  const hash = createHash('sha256');
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d).sort()) {
      const abs = join(d, name);
      const st = lstatSync(abs);
      hash.update(`${rel}${name}\0${st.mode}\0${st.uid}:${st.gid}\0`);
      if (st.isSymbolicLink()) hash.update(readlinkSync(abs));
      else if (st.isFile()) hash.update(readFileSync(abs));
      else if (st.isDirectory()) walk(abs, `${rel}${name}/`);
    }
  };
  walk(dir, '');
  return hash.digest('hex');
}

/** The same, skipping top-level names in `skip`. */
export function treeHashWithout(dir: string, skip: string[]): string {
  const hash = createHash('sha256');
  for (const name of readdirSync(dir).sort()) {
    if (skip.includes(name)) continue;
    const abs = join(dir, name);
    const st = lstatSync(abs);
    hash.update(`${name}\0${st.mode & 0o777}\0`);
    if (st.isSymbolicLink()) hash.update(readlinkSync(abs));
    else if (st.isFile()) hash.update(readFileSync(abs));
    else if (st.isDirectory()) hash.update(treeHashWithout(abs, []));
  }
  return hash.digest('hex');
}
