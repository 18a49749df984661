import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { BatchSummary } from '../../src/batch/run-batch.js';
import type { CaseResult } from '../../src/types.js';
import { type FakeAnthropic, type FakeTurn, startFakeAnthropic } from '../fake-anthropic/server.js';
import { runCli } from '../helpers/cli.js';
import { describeDocker } from '../helpers/docker.js';
import { treeHash } from '../helpers/tree.js';

const T = { timeout: 120_000 };
const bash = (command: string) => ({ content: [{ type: 'tool_use', name: 'bash', input: { command } }] });
const say = (text: string): FakeTurn => ({ content: [{ type: 'text', text }] });

/** A prompt file with front matter. */
function md(dir: string, name: string, front: Record<string, unknown>, prompt = `Task ${name}`): void {
  const yaml = Object.entries(front)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join('\n');
  writeFileSync(join(dir, `${name}.md`), `---\nname: ${name}\n${yaml}\n---\n${prompt}\n`);
}
function script(dir: string, name: string, turns: object[]): string {
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'scripts', `${name}.json`), JSON.stringify({ turns }));
  return `scripted:scripts/${name}.json`;
}
const results = (out: string) => readFileSync(join(out, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as CaseResult);
const xpath = (file: string, expr: string) => execFileSync('xmllint', ['--xpath', expr, file], { encoding: 'utf8' }).trim();

describeDocker('sandloop batch (real Docker, checks in containers)', () => {
  let fake: FakeAnthropic;
  beforeEach(async () => {
    fake = await startFakeAnthropic();
  });
  afterEach(async () => fake.close());

  it('a mixed batch of 13 cases gives exactly the right counts; exit code, JUnit and results.jsonl agree; fixtures untouched', T, async () => {
    const suite = mkdtempSync(join(tmpdir(), 'sandloop-suite-'));
    mkdirSync(join(suite, 'fixtures', 'proj'), { recursive: true });
    writeFileSync(join(suite, 'fixtures', 'proj', 'data.txt'), 'one\ntwo\n');
    writeFileSync(join(suite, 'sandloop.yaml'), 'max_turns: 5\ntimeout: 30\n');
    const fixtureBefore = treeHash(join(suite, 'fixtures'));
    for (let i = 1; i <= 7; i++) {
      md(suite, `pass-${i}`, { checks: [`test "$(cat out.txt)" = "${i}"`], model: script(suite, `pass-${i}`, [bash(`echo ${i} > out.txt`), say(`wrote ${i}`)]), expect: `wrote ${i}` });
    }
    md(suite, 'pass-fixture', { fixture: 'fixtures/proj', checks: ['grep -qx three data.txt'], model: script(suite, 'pass-fixture', [bash('echo three >> data.txt; rm -f nothing'), say('ok')]) });
    md(suite, 'fail-check', { checks: ['true', 'test -f missing.txt'], model: script(suite, 'fail-check', [say('did nothing')]) });
    md(suite, 'fail-expect', { expect: '(?i)^all done$', model: script(suite, 'fail-expect', [say('something else')]) });
    md(suite, 'max-turns', { max_turns: 2, checks: ['true'], model: script(suite, 'max-turns', [bash('true'), bash('true'), bash('true')]) });
    md(suite, 'api-error', { model: 'claude-test', checks: ['true'] });
    writeFileSync(join(suite, 'invalid.md'), '---\nname: invalid\ncolour: blue\n---\nhello\n');
    const overloaded: FakeTurn = { fault: 'http', status: 529, error_type: 'overloaded_error', headers: { 'retry-after-ms': '1' } };
    fake.enqueue(overloaded, overloaded);

    const out = join(mkdtempSync(join(tmpdir(), 'sandloop-res-')), 'r');
    const junit = join(out, '..', 'junit.xml');
    const run = await runCli(['batch', suite, '--out', out, '--junit', junit, '-j', '4', '--max-retries', '1'], {
      env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url },
      cwd: suite,
    });
    // An invalid prompt file makes the exit code 2, after every valid case ran.
    expect(run.code, run.stderr).toBe(2);
    const lines = results(out);
    const by = (s: string) => lines.filter((r) => r.status === s).map((r) => r.name).sort();
    expect(by('pass')).toEqual(['pass-1', 'pass-2', 'pass-3', 'pass-4', 'pass-5', 'pass-6', 'pass-7', 'pass-fixture']);
    expect(by('fail')).toEqual(['fail-check', 'fail-expect']);
    expect(by('error')).toEqual(['api-error', 'max-turns']);
    expect(by('invalid')).toEqual(['invalid.md:3']);
    const get = (name: string) => lines.find((r) => r.name === name)!;
    expect(get('fail-check').reason).toBe('check failed (exit 1): test -f missing.txt');
    expect(get('fail-expect').reason).toBe('expect /(?i)^all done$/ did not match the final answer');
    expect(get('max-turns')).toMatchObject({ run_status: 'max_turns', reason: 'stopped: max_turns' });
    expect(get('api-error')).toMatchObject({ run_status: 'error', reason: 'API error: API error 529 overloaded_error: Overloaded (after 1 retry)' });
    expect(get('invalid.md:3').reason).toMatch(/colour: unknown field/);
    // Checks really ran in containers, on the case's own final workspace.
    expect(readFileSync(join(out, get('pass-fixture').dir, 'workspace', 'data.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
    expect(readFileSync(join(out, get('fail-check').dir, 'checks', '2.txt'), 'utf8')).toBe('$ test -f missing.txt\n[exit 1]\n');
    expect(readdirSync(join(out, get('pass-1').dir))).toEqual(expect.arrayContaining(['transcript.jsonl', 'workspace', 'checks', 'changes.patch']));

    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as BatchSummary;
    expect(summary).toMatchObject({ pass: 8, fail: 2, error: 2, invalid: 1, total: 13 });
    expect(run.stdout).toMatch(/8 pass · 2 fail · 2 error · 1 invalid/);

    // JUnit: valid against the schema, and the same counts.
    execFileSync('xmllint', ['--noout', '--schema', join(__dirname, '..', 'report', 'junit.xsd'), junit], { stdio: 'pipe' });
    expect(xpath(junit, 'string(/testsuites/testsuite/@tests)')).toBe('13');
    expect(xpath(junit, 'string(/testsuites/testsuite/@failures)')).toBe('2');
    expect(xpath(junit, 'string(/testsuites/testsuite/@errors)')).toBe('3');
    expect(xpath(junit, 'string(//testcase[@name="fail-check"]/failure/@message)')).toBe('check failed (exit 1): test -f missing.txt');

    expect(treeHash(join(suite, 'fixtures'))).toBe(fixtureBefore);
  });

  it('exit codes: 0 when all pass, 1 on a failure, 3 on infrastructure errors only', T, async () => {
    const suite = mkdtempSync(join(tmpdir(), 'sandloop-codes-'));
    md(suite, 'ok', { model: script(suite, 'ok', [say('fine')]) });
    const ok = await runCli(['batch', suite, '--out', join(suite, 'r1')], { cwd: suite });
    expect(ok.code, ok.stderr).toBe(0);
    md(suite, 'budget', { max_turns: 1, model: script(suite, 'budget', [bash('true'), bash('true')]) });
    const errorsOnly = await runCli(['batch', suite, '--out', join(suite, 'r2')], { cwd: suite });
    expect(errorsOnly.code).toBe(3);
    md(suite, 'bad', { checks: ['false'], model: script(suite, 'bad', [say('x')]) });
    const failing = await runCli(['batch', suite, '--out', join(suite, 'r3')], { cwd: suite });
    expect(failing.code).toBe(1);
  });

  it('--filter keeps the cases named or tagged so', T, async () => {
    const suite = mkdtempSync(join(tmpdir(), 'sandloop-filter-'));
    md(suite, 'alpha', { tags: ['smoke'], model: script(suite, 'alpha', [say('a')]) });
    md(suite, 'beta', { tags: ['slow'], model: script(suite, 'beta', [say('b')]) });
    md(suite, 'smoke-named', { model: script(suite, 'smoke-named', [say('c')]) });
    const out = join(suite, 'r');
    const run = await runCli(['batch', suite, '--out', out, '--filter', 'smoke'], { cwd: suite });
    expect(run.code, run.stderr).toBe(0);
    expect(results(out).map((r) => r.name).sort()).toEqual(['alpha', 'smoke-named']);
  });

  it('-j 4 keeps four episodes in flight at once', T, async () => {
    const suite = mkdtempSync(join(tmpdir(), 'sandloop-j4-'));
    for (let i = 1; i <= 4; i++) {
      md(suite, `slow-${i}`, { model: script(suite, `slow-${i}`, [bash('date +%s%3N > start; sleep 2; date +%s%3N > end'), say('ok')]) });
    }
    const out = join(suite, 'r');
    const run = await runCli(['batch', suite, '--out', out, '-j', '4'], { cwd: suite });
    expect(run.code, run.stderr).toBe(0);
    const spans = results(out).map((r) => ['start', 'end'].map((f) => Number(readFileSync(join(out, r.dir, 'workspace', f), 'utf8'))));
    const latestStart = Math.max(...spans.map((s) => s[0]!));
    const earliestEnd = Math.min(...spans.map((s) => s[1]!));
    expect(latestStart).toBeLessThan(earliestEnd);
  });

  it('repeat gives the right pass@k and pass^k', T, async () => {
    const suite = mkdtempSync(join(tmpdir(), 'sandloop-rep-'));
    md(suite, 'flaky', { model: 'claude-test', repeat: 3, expect: 'yes' });
    fake.enqueue(say('yes'), say('no'), say('yes'));
    const out = join(suite, 'r');
    const run = await runCli(['batch', suite, '--out', out, '-j', '1'], { env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url }, cwd: suite });
    expect(run.code).toBe(1);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as BatchSummary;
    expect(summary.cases).toEqual([{ name: 'flaky', attempts: 3, passed: 2, k: 3, pass_at_1: expect.closeTo(2 / 3, 9), pass_at_k: 1, pass_hat_k: 0 }]);
    expect(results(out).map((r) => [r.attempt, r.status])).toEqual([
      [1, 'pass'],
      [2, 'fail'],
      [3, 'pass'],
    ]);
    expect(run.stdout).toMatch(/flaky {2}2\/3 {2}0\.67 {2}1\.00 {2}0\.00 {2}\(k=3\)/);
  });

  it('Ctrl-C stops new cases and lets running ones finish; --resume runs only what is missing', T, async () => {
    const suite = mkdtempSync(join(tmpdir(), 'sandloop-resume-'));
    for (let i = 1; i <= 4; i++) md(suite, `c${i}`, { model: script(suite, `c${i}`, [bash('sleep 2; echo done > done.txt'), say('ok')]) });
    const out = join(suite, 'r');
    const first = await runCli(['batch', suite, '--out', out, '-j', '2'], {
      cwd: suite,
      onSpawn: (child) => setTimeout(() => child.kill('SIGINT'), 1500),
    });
    expect(first.code).toBe(130);
    expect(first.stderr).toContain('starting no new case');
    const done = results(out);
    expect(done).toHaveLength(2);
    expect(done.every((r) => r.status === 'pass')).toBe(true);
    expect(first.stdout).toMatch(/interrupted: continue with {2}sandloop batch --resume/);

    const second = await runCli(['batch', suite, '--resume', out, '-j', '2'], { cwd: suite });
    expect(second.code, second.stderr).toBe(0);
    const all = results(out);
    expect(all).toHaveLength(4);
    expect(new Set(all.map((r) => r.name)).size).toBe(4);
    expect(second.stderr).toContain('2 attempts already finished, 2 to run');
  });

  it('the examples/ suite passes with its scripted turns', T, async () => {
    const root = join(__dirname, '..', '..');
    const out = join(mkdtempSync(join(tmpdir(), 'sandloop-examples-')), 'r');
    const before = treeHash(join(root, 'examples'));
    const run = await runCli(['batch', 'examples/', '--model', 'scripted:examples/scripts', '--out', out], { cwd: root });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(results(out).map((r) => `${r.name}:${r.status}`).sort()).toEqual([
      'count-lines:pass',
      'fix-failing-test:pass',
      'git-branch:pass',
      'hello-python:pass',
      'list-python-files:pass',
      'slugify:pass',
    ]);
    expect(treeHash(join(root, 'examples'))).toBe(before);
  });
});

describeDocker('sandloop batch: cost and the live display', () => {
  let fake: FakeAnthropic;
  beforeEach(async () => {
    fake = await startFakeAnthropic();
  });
  afterEach(async () => fake.close());

  it('--max-cost-usd stops starting new cases once spent, and says so', T, async () => {
    const suite = mkdtempSync(join(tmpdir(), 'sandloop-cost-'));
    for (const name of ['a', 'b', 'c']) md(suite, name, { model: 'claude-sonnet-4-5' });
    // 1M input tokens at $3/MTok: the first case alone spends $3.
    for (let i = 0; i < 3; i++) fake.enqueue({ content: [{ type: 'text', text: 'ok' }], usage: { input_tokens: 1_000_000, output_tokens: 0 } });
    const out = join(suite, 'r');
    const run = await runCli(['batch', suite, '--out', out, '-j', '1', '--max-cost-usd', '1'], { env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url }, cwd: suite });
    expect(run.code, run.stderr).toBe(0);
    expect(results(out)).toHaveLength(1);
    expect(results(out)[0]!.cost_usd).toBeCloseTo(3, 6);
    expect(run.stderr).toContain('--max-cost-usd 1: $3.0000 spent; starting no new case');
    expect(run.stdout).toMatch(/2 not run/);
    expect(run.stdout).toContain('stopped starting cases: --max-cost-usd reached');
  });

  it('on a TTY, shows a live display with counts, ETA, cost and one line per running case', T, async () => {
    const suite = mkdtempSync(join(tmpdir(), 'sandloop-tty-'));
    for (const name of ['one', 'two']) md(suite, name, { model: script(suite, name, [bash('sleep 1; echo hi'), say('ok')]) });
    const cli = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
    const output = execFileSync('script', ['-qec', `${process.execPath} ${cli} batch ${suite} --out ${join(suite, 'r')} -j 2`, '/dev/null'], { encoding: 'utf8', cwd: suite });
    expect(output).toMatch(/\d\/2 done · \d pass · 0 fail · 0 error · \d+s/);
    expect(output).toMatch(/▸ (one|two) · turn 1 · \$ sleep 1; echo hi/);
    expect(output).toContain('$0.0000');
  });
});
