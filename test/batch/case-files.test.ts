import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCases } from '../../src/batch/case-files.js';
import { expectRegExp } from '../../src/batch/case-schema.js';
import { ConfigError } from '../../src/errors.js';

const temps: string[] = [];
afterAll(() => {
  for (const t of temps) rmSync(t, { recursive: true, force: true });
});

/** A temp dir holding `files` (path → content; a path ending in `/` is an empty folder). */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'sandloop-cases-'));
  temps.push(root);
  for (const [path, content] of Object.entries(files)) {
    if (path.endsWith('/')) mkdirSync(join(root, path), { recursive: true });
    else {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), content);
    }
  }
  return root;
}

/** Lines joined, so a test shows a file the way it reads (and its line numbers are easy to count). */
const lines = (...ls: string[]) => `${ls.join('\n')}\n`;

describe('formats', () => {
  it('reads a Markdown case: front matter, then the body as the prompt', async () => {
    const root = tree({
      'fx/': '',
      'fix-bug.md': lines('---', 'max_turns: 10', 'timeout: 2.5', 'fixture: fx', 'checks: [npm test]', 'expect: done', 'repeat: 3', 'tags: [a, b]', '---', '', 'Fix the bug.', 'Then say done.', ''),
    });
    const { cases, invalid } = await loadCases(['fix-bug.md'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases).toEqual([
      {
        name: 'fix-bug',
        prompt: 'Fix the bug.\nThen say done.',
        file: join(root, 'fix-bug.md'),
        line: 1,
        fixture: join(root, 'fx'),
        max_turns: 10,
        timeout: 2.5,
        checks: ['npm test'],
        expect: 'done',
        repeat: 3,
        tags: ['a', 'b'],
      },
    ]);
  });

  it('takes a Markdown file without front matter whole as the prompt, with the defaults', async () => {
    const root = tree({ 'plain.md': '\n  Just do it.\n\n' });
    const { cases } = await loadCases(['plain.md'], { cwd: root });
    expect(cases).toEqual([{ name: 'plain', prompt: 'Just do it.', file: join(root, 'plain.md'), line: 1, checks: [], repeat: 1, tags: [] }]);
  });

  it('reads JSONL: one case per non-empty line, named <stem>-<n>, with its line', async () => {
    const root = tree({ 'suite.jsonl': lines('{"prompt": "one"}', '', '{"prompt": "two", "name": "second", "max_turns": 4}', '{"prompt": "three"}') });
    const { cases, invalid } = await loadCases(['suite.jsonl'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases.map((c) => [c.name, c.line, c.prompt, c.max_turns])).toEqual([
      ['suite-1', 1, 'one', undefined],
      ['second', 3, 'two', 4],
      ['suite-3', 4, 'three', undefined],
    ]);
  });

  it('reads a YAML suite given as a list, each case at the line of its item', async () => {
    const root = tree({ 'suite.yaml': lines('# cases', '- prompt: one', '  tags: smoke', '', '- name: two', '  prompt: |', '    two', '    lines') });
    const { cases, invalid } = await loadCases(['suite.yaml'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases.map((c) => [c.name, c.line, c.prompt, c.tags])).toEqual([
      ['suite-1', 2, 'one', ['smoke']],
      ['two', 5, 'two\nlines\n', []],
    ]);
  });

  it('applies a suite\'s defaults to each case, the case\'s own fields first', async () => {
    const root = tree({
      'suites/s.yml': lines('defaults:', '  max_turns: 3', '  checks: [make]', 'cases:', '  - prompt: a', '  - prompt: b', '    max_turns: 9', '    checks: []'),
    });
    const { cases, invalid } = await loadCases(['suites/s.yml'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases.map((c) => [c.name, c.line, c.max_turns, c.checks])).toEqual([
      ['s-1', 5, 3, ['make']],
      ['s-2', 6, 9, []],
    ]);
  });

  it('lets suite items share fields with YAML anchors and merge keys', async () => {
    const root = tree({ 's.yaml': lines('- &base', '  prompt: one', '  max_turns: 2', '- <<: *base', '  name: two', '  colour: red') });
    const { cases, invalid } = await loadCases(['s.yaml'], { cwd: root });
    expect(cases.map((c) => [c.name, c.prompt, c.max_turns])).toEqual([['s-1', 'one', 2]]);
    expect(invalid).toEqual([{ file: join(root, 's.yaml'), line: 6, message: 'colour: unknown field' }]);
  });

  it('keeps the good cases of a suite with a bad one', async () => {
    const root = tree({ 's.yaml': lines('- prompt: good', '- prompt: bad', '  max_turns: 0', '- prompt: also good') });
    const { cases, invalid } = await loadCases(['s.yaml'], { cwd: root });
    expect(cases.map((c) => c.name)).toEqual(['s-1', 's-3']);
    expect(invalid).toEqual([{ file: join(root, 's.yaml'), line: 3, message: 'max_turns: expected a positive integer, got 0' }]);
  });
});

describe('fields', () => {
  it('accepts `tags: smoke` as one tag', async () => {
    const root = tree({ 'a.md': lines('---', 'tags: smoke', '---', 'hi') });
    const { cases } = await loadCases(['a.md'], { cwd: root });
    expect(cases[0]!.tags).toEqual(['smoke']);
  });

  it('resolves a scripted model relative to the case file, and leaves model ids alone', async () => {
    const root = tree({
      'cases/scripts/s.json': '{"turns": []}',
      'cases/a.md': lines('---', 'model: scripted:scripts/s.json', '---', 'hi'),
      'cases/b.md': lines('---', 'model: claude-sonnet-4-5', '---', 'hi'),
    });
    const { cases, invalid } = await loadCases(['cases'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases.map((c) => c.model)).toEqual([`scripted:${join(root, 'cases/scripts/s.json')}`, 'claude-sonnet-4-5']);
  });

  it('keeps a (?i) expect as written; expectRegExp makes it case-insensitive', async () => {
    const root = tree({ 'a.jsonl': lines(JSON.stringify({ prompt: 'p', expect: '(?i)^all (tests )?pass' })) });
    const { cases, invalid } = await loadCases(['a.jsonl'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases[0]!.expect).toBe('(?i)^all (tests )?pass');
    expect(expectRegExp(cases[0]!.expect!).test('ALL TESTS PASS')).toBe(true);
    expect(expectRegExp('^done$').test('DONE')).toBe(false);
  });
});

describe('problems, each with the line to fix', () => {
  async function invalidOf(files: Record<string, string>, input: string) {
    const root = tree(files);
    const { cases, invalid } = await loadCases([input], { cwd: root });
    return { cases, invalid: invalid.map((i) => ({ ...i, file: i.file.slice(root.length + 1) })) };
  }

  it('a wrong type, with the value given', async () => {
    const { cases, invalid } = await invalidOf({ 'a.md': lines('---', 'name: x', 'max_turns: ten', '---', 'hi') }, 'a.md');
    expect(cases).toEqual([]);
    expect(invalid).toEqual([{ file: 'a.md', line: 3, message: 'max_turns: expected a positive integer, got "ten"' }]);
  });

  it('an unknown field', async () => {
    const { invalid } = await invalidOf({ 's.yaml': lines('- prompt: hi', '  colour: red') }, 's.yaml');
    expect(invalid).toEqual([{ file: 's.yaml', line: 2, message: 'colour: unknown field' }]);
  });

  it('an empty Markdown body', async () => {
    const { invalid } = await invalidOf({ 'a.md': lines('---', 'max_turns: 2', '---', '', '   ') }, 'a.md');
    expect(invalid).toEqual([{ file: 'a.md', line: 1, message: 'prompt: missing (the Markdown body is empty)' }]);
  });

  it('a prompt in front matter', async () => {
    const { invalid } = await invalidOf({ 'a.md': lines('---', 'prompt: hi', '---', 'body') }, 'a.md');
    expect(invalid).toEqual([{ file: 'a.md', line: 2, message: 'prompt: not allowed in front matter (the Markdown body is the prompt)' }]);
  });

  it('a missing prompt in a suite', async () => {
    const { invalid } = await invalidOf({ 's.yaml': lines('- name: a', '  max_turns: 2') }, 's.yaml');
    expect(invalid).toEqual([{ file: 's.yaml', line: 1, message: 'prompt: missing' }]);
  });

  it('a regex that does not compile', async () => {
    const { invalid } = await invalidOf({ 'a.md': lines('---', 'tags: [x]', 'expect: "(unclosed"', '---', 'hi') }, 'a.md');
    expect(invalid).toEqual([{ file: 'a.md', line: 3, message: 'expect: not a valid regular expression: Unterminated group' }]);
  });

  it('a fixture that does not exist, or is not a directory', async () => {
    const { invalid } = await invalidOf(
      { 's.yaml': lines('- prompt: a', '  fixture: fixtures/nope', '- prompt: b', '  fixture: s.yaml') },
      's.yaml',
    );
    expect(invalid).toEqual([
      { file: 's.yaml', line: 2, message: 'fixture: fixtures/nope does not exist' },
      { file: 's.yaml', line: 4, message: 'fixture: s.yaml is not a directory' },
    ]);
  });

  it('a scripted model file that does not exist', async () => {
    const { invalid } = await invalidOf({ 'a.jsonl': lines('{"prompt": "p", "model": "scripted:nope.json"}') }, 'a.jsonl');
    expect(invalid).toEqual([{ file: 'a.jsonl', line: 1, message: 'model: scripted file nope.json does not exist' }]);
  });

  it('a list item that is a bad element of a list field', async () => {
    const { invalid } = await invalidOf({ 's.yaml': lines('- prompt: a', '  checks:', '    - npm test', '    - ""') }, 's.yaml');
    expect(invalid).toEqual([{ file: 's.yaml', line: 4, message: 'checks: expected a list of non-empty strings, got ["npm test",""]' }]);
  });

  it('every problem of a case, each on its own line', async () => {
    const { invalid } = await invalidOf({ 's.yaml': lines('- prompt: a', '  repeat: -1.5', '  timeout: soon', '  extra: 1') }, 's.yaml');
    expect(invalid).toEqual([
      { file: 's.yaml', line: 2, message: 'repeat: expected a positive integer, got -1.5' },
      { file: 's.yaml', line: 3, message: 'timeout: expected a positive number of seconds, got "soon"' },
      { file: 's.yaml', line: 4, message: 'extra: unknown field' },
    ]);
  });

  it('YAML syntax errors in a suite, at the parser\'s line', async () => {
    const { invalid } = await invalidOf({ 's.yaml': lines('- prompt: a', '- prompt: [b', '- prompt: c') }, 's.yaml');
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toMatchObject({ file: 's.yaml', line: 3 });
    expect(invalid[0]!.message).toMatch(/^invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a \] at line 3/);
  });

  it('YAML syntax errors in front matter, at the file\'s line', async () => {
    const { invalid } = await invalidOf({ 'a.md': lines('---', 'name: a', 'name: b', '---', 'hi') }, 'a.md');
    expect(invalid).toEqual([{ file: 'a.md', line: 3, message: 'invalid YAML: Map keys must be unique at line 3, column 1:' }]);
  });

  it('front matter that is never closed', async () => {
    const { invalid } = await invalidOf({ 'a.md': lines('---', 'name: a', 'hi') }, 'a.md');
    expect(invalid).toEqual([{ file: 'a.md', line: 1, message: 'front matter: no closing --- line' }]);
  });

  it('a JSONL line that is not JSON or not an object, the other lines loaded', async () => {
    const { cases, invalid } = await invalidOf({ 'a.jsonl': lines('{"prompt": "ok"}', '{"prompt": }', '', '"just text"') }, 'a.jsonl');
    expect(cases.map((c) => c.name)).toEqual(['a-1']);
    expect(invalid).toEqual([
      { file: 'a.jsonl', line: 2, message: expect.stringMatching(/^invalid JSON: /) },
      { file: 'a.jsonl', line: 4, message: 'case: expected key: value pairs, got "just text"' },
    ]);
  });

  it('a suite that is neither a list nor a map with cases:', async () => {
    const { invalid } = await invalidOf({ 's.yaml': lines('prompt: hi', 'name: x') }, 's.yaml');
    expect(invalid).toEqual([
      { file: 's.yaml', line: 1, message: 'cases: missing' },
      { file: 's.yaml', line: 1, message: 'prompt: unknown field' },
      { file: 's.yaml', line: 2, message: 'name: unknown field' },
    ]);
  });

  it('a suite whose defaults are bad: its cases are not loaded', async () => {
    const { cases, invalid } = await invalidOf({ 's.yaml': lines('defaults:', '  name: shared', 'cases:', '  - prompt: a') }, 's.yaml');
    expect(cases).toEqual([]);
    expect(invalid).toEqual([{ file: 's.yaml', line: 2, message: 'name: not allowed in defaults (each case has its own)' }]);
  });

  it('an empty suite', async () => {
    const { invalid } = await invalidOf({ 's.yaml': lines('cases: []'), 'e.jsonl': '\n\n' }, '.');
    expect(invalid).toEqual([
      { file: 'e.jsonl', line: 1, message: 'cases: none found (the file is empty)' },
      { file: 's.yaml', line: 1, message: 'cases: none found (the list is empty)' },
    ]);
  });

  it('a file of another type named on its own', async () => {
    const { invalid } = await invalidOf({ 'notes.txt': 'hi' }, 'notes.txt');
    expect(invalid).toEqual([{ file: 'notes.txt', line: 1, message: 'file: not a prompt file (expected .md, .jsonl, .yaml, .yml)' }]);
  });

  it('duplicate names across files: the second one is invalid, naming both', async () => {
    const root = tree({
      'a.md': lines('---', 'name: same', '---', 'one'),
      'b.jsonl': lines('{"prompt": "x"}', '{"name": "same", "prompt": "two"}'),
      's.yaml': lines('- prompt: three', '  name: same'),
    });
    const { cases, invalid } = await loadCases(['.'], { cwd: root });
    expect(cases.map((c) => [c.name, c.prompt])).toEqual([
      ['same', 'one'],
      ['b-1', 'x'],
    ]);
    expect(invalid).toEqual([
      { file: join(root, 'b.jsonl'), line: 2, message: 'name: duplicate "same" (a.md:1 and b.jsonl:2)' },
      { file: join(root, 's.yaml'), line: 2, message: 'name: duplicate "same" (a.md:1 and s.yaml:1)' },
    ]);
  });
});

describe('finding the files', () => {
  it('takes every prompt file below a folder, sorted, except defaults, READMEs, fixtures, node_modules and .git', async () => {
    const root = tree({
      'cases/b.md': 'b',
      'cases/a.jsonl': '{"prompt": "a"}',
      'cases/deep/er/c.yml': '- prompt: c',
      'cases/deep/d.yaml': '- prompt: d',
      'cases/README.md': '# about these cases',
      'cases/deep/readme.md': 'also not a case',
      'cases/sandloop.yaml': 'max_turns: 2',
      'cases/deep/sandloop.yml': 'max_turns: 3',
      'cases/fixtures/repo/NOTES.md': 'not a case',
      'cases/deep/fixtures/x.yaml': 'not: a case',
      'cases/node_modules/pkg/README.md': 'no',
      'cases/node_modules/pkg/x.md': 'no',
      'cases/.git/x.md': 'no',
      'cases/notes.txt': 'no',
    });
    const { cases, invalid } = await loadCases(['cases'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases.map((c) => c.file.slice(root.length + 1))).toEqual(['cases/a.jsonl', 'cases/b.md', 'cases/deep/d.yaml', 'cases/deep/er/c.yml']);
  });

  it('a folder named directly may itself be under fixtures/', async () => {
    const root = tree({ 'test/fixtures/cases/a.md': 'a' });
    const { cases } = await loadCases([join(root, 'test/fixtures/cases')]);
    expect(cases.map((c) => c.name)).toEqual(['a']);
  });

  it('expands globs relative to cwd, with the same rules below the fixed part', async () => {
    const root = tree({
      'cases/x/one.md': 'one',
      'cases/x/two.md': 'two',
      'cases/y/three.md': 'three',
      'cases/y/README.md': 'no',
      'cases/y/fixtures/four.md': 'no',
      'cases/y/notes.txt': 'no',
      'other/fixtures/five.md': 'five',
    });
    const found = async (...inputs: string[]) => (await loadCases(inputs, { cwd: root })).cases.map((c) => c.name);
    expect(await found('cases/**/*')).toEqual(['one', 'two', 'three']);
    expect(await found('cases/{y,x}/t*.md')).toEqual(['two', 'three']); // sorted by path, not by pattern
    expect(await found('other/fixtures/*.md')).toEqual(['five']);
  });

  it('expands absolute globs and globs above cwd', async () => {
    const root = tree({ 'cases/a.md': 'a', 'cases/fixtures/b.md': 'no', 'work/': '' });
    const names = async (input: string, cwd: string) => (await loadCases([input], { cwd })).cases.map((c) => c.name);
    expect(await names(join(root, 'cases/**/*.md'), '/')).toEqual(['a']);
    expect(await names('../cases/**/*.md', join(root, 'work'))).toEqual(['a']);
    expect(await names('./cases/*.md', root)).toEqual(['a']);
  });

  it('reads a file reached twice once, in the order first reached', async () => {
    const root = tree({ 'cases/a.md': 'a', 'cases/b.md': 'b' });
    symlinkSync(join(root, 'cases/a.md'), join(root, 'link.md'));
    const { cases, invalid } = await loadCases(['cases/b.md', 'cases', 'cases/*.md', 'link.md'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases.map((c) => c.name)).toEqual(['b', 'a']);
  });

  it('throws ConfigError for an input that matches nothing', async () => {
    const root = tree({ 'cases/a.md': 'a', 'empty/': '', 'only-fixtures/fixtures/x.md': 'no' });
    const load = (input: string) => loadCases([input], { cwd: root });
    await expect(load('nope.md')).rejects.toThrow(new ConfigError('nope.md does not exist'));
    await expect(load('cases/*.yaml')).rejects.toThrow(new ConfigError("no prompt files match 'cases/*.yaml'"));
    await expect(load('empty')).rejects.toThrow(new ConfigError("no prompt files match 'empty'"));
    await expect(load('only-fixtures')).rejects.toThrow(ConfigError);
  });
});

describe('sandloop.yaml defaults', () => {
  it('layers defaults from the named folder down, nearer first, the case first of all; paths relative to each file', async () => {
    const root = tree({
      'sandloop.yaml': 'max_turns: 99', // above the folder named: not used
      'suite/sandloop.yaml': lines('max_turns: 5', 'timeout: 30', 'model: scripted:scripts/top.json', 'fixture: fx', 'tags: top'),
      'suite/scripts/top.json': '{}',
      'suite/fx/': '',
      'suite/web/sandloop.yml': lines('timeout: 60', 'fixture: ../web-fx', 'checks: [npm test]'),
      'suite/web-fx/': '',
      'suite/web/a.md': lines('---', 'max_turns: 7', '---', 'a'),
      'suite/web/s.yaml': lines('defaults:', '  tags: [suite]', 'cases:', '  - prompt: b', '  - prompt: c', '    tags: own'),
      'suite/top.md': 'top',
    });
    const { cases, invalid } = await loadCases(['suite'], { cwd: root });
    expect(invalid).toEqual([]);
    const model = `scripted:${join(root, 'suite/scripts/top.json')}`;
    const web = { timeout: 60, model, fixture: join(root, 'suite/web-fx'), checks: ['npm test'] };
    expect(cases.map(({ name, max_turns, timeout, model, fixture, checks, tags }) => ({ name, max_turns, timeout, model, fixture, checks, tags }))).toEqual([
      { name: 'top', max_turns: 5, timeout: 30, model, fixture: join(root, 'suite/fx'), checks: [], tags: ['top'] },
      { name: 'a', max_turns: 7, ...web, tags: ['top'] },
      { name: 's-1', max_turns: 5, ...web, tags: ['suite'] },
      { name: 's-2', max_turns: 5, ...web, tags: ['own'] },
    ]);
  });

  it('for files and globs, looks up to cwd', async () => {
    const root = tree({ 'sandloop.yaml': 'repeat: 4', 'a/b/c.md': 'c', 'a/b/sandloop.yaml': 'max_turns: 2' });
    const { cases } = await loadCases(['a/b/c.md', 'a/**/*.md'], { cwd: root });
    expect(cases).toMatchObject([{ name: 'c', repeat: 4, max_turns: 2 }]);
    const inner = await loadCases(['c.md'], { cwd: join(root, 'a/b') });
    expect(inner.cases).toMatchObject([{ name: 'c', repeat: 1, max_turns: 2 }]);
  });

  it('an invalid sandloop.yaml: its problems once, and every case file below it invalid', async () => {
    const root = tree({
      'cases/sandloop.yaml': lines('timeout: 10', 'max_turns: lots', 'name: x'),
      'cases/a.md': 'a',
      'cases/sub/b.jsonl': '{"prompt": "b"}',
      'other/c.md': 'c',
    });
    const { cases, invalid } = await loadCases(['cases', 'other'], { cwd: root });
    expect(cases.map((c) => c.name)).toEqual(['c']);
    const defaults = join(root, 'cases/sandloop.yaml');
    expect(invalid).toEqual([
      { file: defaults, line: 2, message: 'max_turns: expected a positive integer, got "lots"' },
      { file: defaults, line: 3, message: 'name: not allowed in defaults (each case has its own)' },
      { file: join(root, 'cases/a.md'), line: 1, message: "defaults: cases/sandloop.yaml is invalid, so this file's cases are not run" },
      { file: join(root, 'cases/sub/b.jsonl'), line: 1, message: "defaults: cases/sandloop.yaml is invalid, so this file's cases are not run" },
    ]);
  });

  it('a sandloop.yaml with a YAML error, and a folder with both sandloop.yaml and sandloop.yml', async () => {
    const root = tree({
      'a/sandloop.yaml': lines('timeout: 1', 'checks: [x'),
      'a/a.md': 'a',
      'b/sandloop.yaml': '',
      'b/sandloop.yml': '',
      'b/b.md': 'b',
    });
    const { cases, invalid } = await loadCases(['a', 'b'], { cwd: root });
    expect(cases).toEqual([]);
    expect(invalid.map((i) => [i.file.slice(root.length + 1), i.line, i.message.split(' at line')[0]])).toEqual([
      ['a/sandloop.yaml', 3, 'invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]'],
      ['a/a.md', 1, "defaults: a/sandloop.yaml is invalid, so this file's cases are not run"],
      ['b/sandloop.yml', 1, `file: ${join(root, 'b')} has both sandloop.yaml and sandloop.yml; keep one`],
      ['b/b.md', 1, "defaults: b/sandloop.yml is invalid, so this file's cases are not run"],
    ]);
  });

  it('an empty sandloop.yaml sets nothing', async () => {
    const root = tree({ 'sandloop.yaml': '# nothing yet\n', 'a.md': 'a' });
    const { cases, invalid } = await loadCases(['.'], { cwd: root });
    expect(invalid).toEqual([]);
    expect(cases).toMatchObject([{ name: 'a', repeat: 1 }]);
  });
});
