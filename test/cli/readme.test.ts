import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.js';
import { runCli } from '../helpers/cli.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The README section that documents one command: from its heading to the next heading. */
function section(heading: string): string {
  const start = readme.indexOf(`### \`${heading}`);
  expect(start, `README has a section for ${heading}`).toBeGreaterThan(-1);
  const end = readme.indexOf('\n#', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

async function helpFlags(args: string[]): Promise<string[]> {
  const { stdout, code } = await runCli([...args, '--help']);
  expect(code).toBe(0);
  const flags = new Set(stdout.match(/--[a-z][a-z-]+/g) ?? []);
  flags.delete('--help');
  flags.delete('--version');
  return [...flags];
}

describe('README matches --help', () => {
  for (const [command, heading] of [
    [['run'], 'sandloop run'],
    [['demo'], 'sandloop demo'],
    [['image', 'build'], 'sandloop image build'],
    [['gc'], 'sandloop gc'],
    [['batch'], 'sandloop batch'],
  ] as const) {
    it(`documents every flag of ${heading}`, async () => {
      const flags = await helpFlags([...command]);
      expect(flags.length).toBeGreaterThan(0);
      const doc = section(heading);
      for (const flag of flags) {
        // A row for the flag (its first cell may list several flags that share a meaning).
        expect(doc, `a table row for ${flag} in README's ${heading} section`).toMatch(new RegExp(`^\\| [^|]*\`(-[a-z], )?${flag}[ \`]`, 'm'));
      }
    });
  }

  it('documents every exit code', () => {
    const table = readme.slice(readme.indexOf('## Exit codes'));
    for (const code of Object.values(EXIT)) expect(table).toMatch(new RegExp(`^\\| ${code} \\|`, 'm'));
  });

  it('opens with the demo and the test command', () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)![1]!;
    expect(firstBlock).toMatch(/^npm ci && npm run demo/m);
    expect(firstBlock).toMatch(/^npm test/m);
  });
});
