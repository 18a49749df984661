import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

describe('a fast CLI start', () => {
  it('--version and --help load no Docker or SDK code', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandloop-hook-'));
    const seen = join(dir, 'seen.txt');
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(${JSON.stringify(seen)}, r.url + '\\n');
  return r;
}`,
    );
    writeFileSync(join(dir, 'register.mjs'), `import { register } from 'node:module'; register(${JSON.stringify(`file://${join(dir, 'hooks.mjs')}`)});`);
    for (const args of [['--version'], ['--help'], ['run', '--help']]) {
      writeFileSync(seen, '');
      const run = await runCli(args, { env: { NODE_OPTIONS: `--import ${join(dir, 'register.mjs')}` } });
      expect(run.code).toBe(0);
      const loaded = readFileSync(seen, 'utf8');
      expect(loaded).toContain('/yargs/');
      expect(loaded).not.toMatch(/dockerode|docker-modem|@anthropic-ai/);
    }
  });
});
