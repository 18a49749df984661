import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { CaseResult, RunEvent } from '../../src/types.js';
import { type FakeTurn, startFakeAnthropic } from '../fake-anthropic/server.js';
import { runCli } from '../helpers/cli.js';
import { describeDocker } from '../helpers/docker.js';
import { treeHash } from '../helpers/tree.js';

const T = { timeout: 120_000 };
const bash = (command: string): FakeTurn => ({ content: [{ type: 'tool_use', name: 'bash', input: { command } }] });
const say = (text: string): FakeTurn => ({ content: [{ type: 'text', text }] });
const results = (out: string) =>
  readFileSync(join(out, 'results.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CaseResult)
    .sort((a, b) => a.name.localeCompare(b.name));
const root = join(__dirname, '..', '..');

/** A server that counts every request it gets: replay must make none. */
async function tripwire() {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.writeHead(500).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits, close: () => new Promise((r) => server.close(r)) };
}

function suite(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandloop-rr-'));
  mkdirSync(join(dir, 'fixtures', 'data'), { recursive: true });
  writeFileSync(join(dir, 'fixtures', 'data', 'numbers.txt'), '3\n1\n2\n');
  writeFileSync(join(dir, 'sort-numbers.md'), '---\nfixture: fixtures/data\nchecks: ["test \\"$(cat sorted.txt)\\" = \\"$(printf \'1\\\\n2\\\\n3\')\\""]\n---\nSort numbers.txt into sorted.txt\n');
  writeFileSync(join(dir, 'count.md'), '---\nfixture: fixtures/data\nexpect: "3 numbers"\n---\nHow many numbers are in numbers.txt?\n');
  return dir;
}

describeDocker('record and replay (real SDK, fake server, real Docker)', () => {
  it('a batch recorded against the fake server replays with the server gone: same results, same workspaces, no network', T, async () => {
    const dir = suite();
    const fake = await startFakeAnthropic();
    // -j 1 and sorted names: count runs first, then sort-numbers.
    fake.enqueue(bash('wc -l < numbers.txt'), say('There are 3 numbers.'), bash('sort -n numbers.txt > sorted.txt && cat sorted.txt'), say('Sorted.'));
    const recorded = join(dir, 'rec-results');
    const rec = await runCli(['batch', '.', '-j', '1', '--record', 'cassettes', '--out', recorded, '--model', 'claude-test'], {
      cwd: dir,
      env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url },
    });
    expect(rec.code, rec.stderr).toBe(0);
    await fake.close();
    expect(readdirSync(join(dir, 'cassettes')).sort()).toEqual(['count.jsonl', 'sort-numbers.jsonl']);

    const wire = await tripwire();
    const replayed = join(dir, 'rep-results');
    const rep = await runCli(['batch', '.', '--replay', 'cassettes', '--out', replayed, '--junit', join(dir, 'junit.xml')], {
      cwd: dir,
      cleanEnv: true,
      env: { ANTHROPIC_BASE_URL: wire.url, HOME: dir },
    });
    await wire.close();
    expect(rep.code, rep.stdout + rep.stderr).toBe(0);
    expect(wire.hits()).toBe(0);
    const a = results(recorded);
    const b = results(replayed);
    expect(b.map((r) => [r.name, r.status, r.result, r.tool_calls])).toEqual(a.map((r) => [r.name, r.status, r.result, r.tool_calls]));
    for (const [x, y] of a.map((r, i) => [r, b[i]!] as const)) {
      expect(treeHash(join(replayed, y.dir, 'workspace'))).toBe(treeHash(join(recorded, x.dir, 'workspace')));
    }

    // A real regression: the fixture changes, so a recorded command's output changes.
    writeFileSync(join(dir, 'fixtures', 'data', 'numbers.txt'), '3\n1\n2\n4\n');
    const red = await runCli(['batch', '.', '--replay', 'cassettes', '--out', join(dir, 'red')], { cwd: dir, cleanEnv: true, env: { HOME: dir } });
    expect(red.code).toBe(1);
    const failed = results(join(dir, 'red'));
    expect(failed.map((r) => [r.name, r.status, r.run_status])).toEqual([
      ['count', 'fail', 'replay_mismatch'],
      ['sort-numbers', 'fail', 'replay_mismatch'],
    ]);
    expect(failed[0]!.error).toMatch(/turn 2: the request differs from the recording/);
    expect(failed[0]!.error).toMatch(/tool result 1 of 1 \(for: wc -l < numbers.txt\) differs:/);
    expect(failed[0]!.error).toMatch(/^-3$/m);
    expect(failed[0]!.error).toMatch(/^\+4$/m);
  });

  it('run --record then --replay of one episode; lenient mode warns and goes on', T, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandloop-rr1-'));
    writeFileSync(join(dir, 'x.txt'), 'one\n');
    const fake = await startFakeAnthropic({ turns: [bash('cat x.txt'), say('it says one')] });
    const rec = await runCli(['run', '--task-dir', dir, '--record', join(dir, '..', 'ep.jsonl'), '--quiet', 'read it'], {
      env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url },
    });
    await fake.close();
    expect(rec.code, rec.stderr).toBe(0);
    const cassette = join(dir, '..', 'ep.jsonl');
    const ok = await runCli(['run', '--task-dir', dir, '--replay', cassette, 'read it'], { cleanEnv: true });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toBe('it says one\n');
    expect(ok.stderr).toContain('replayed model: the turns come from a recorded cassette, not generated');

    writeFileSync(join(dir, 'x.txt'), 'two\n');
    const strict = await runCli(['run', '--task-dir', dir, '--replay', cassette, '--output-format', 'json', 'read it'], { cleanEnv: true });
    expect(strict.code).toBe(1);
    expect(JSON.parse(strict.stdout)).toMatchObject({ status: 'replay_mismatch' });
    const lenient = await runCli(['run', '--task-dir', dir, '--replay', cassette, '--replay-mode', 'lenient', '--output-format', 'stream-json', 'read it'], {
      cleanEnv: true,
    });
    expect(lenient.code).toBe(0);
    const events = lenient.stdout.trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
    expect(events.filter((e) => e.type === 'warning')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'result', status: 'completed' });
  });

  it('the committed cassettes replay the examples/ suite (keys are stable across runs and machines)', T, async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'sandloop-smoke-')), 'r');
    const junit = join(out, '..', 'junit.xml');
    const run = await runCli(['batch', 'examples/', '--replay', 'cassettes/', '--out', out, '--junit', junit], { cwd: root, cleanEnv: true, env: { HOME: tmpdir() } });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(results(out).every((r) => r.status === 'pass')).toBe(true);
    execFileSync('xmllint', ['--noout', '--schema', join(root, 'test', 'report', 'junit.xsd'), junit], { stdio: 'pipe' });
  });

  it('sandloop cassette show prints a recorded episode as a conversation', async () => {
    const run = await runCli(['cassette', 'show', join(root, 'cassettes', 'fix-failing-test.jsonl')]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('## Turn 1');
    expect(run.stdout).toContain("$ sed -i 's/return a - b/return a + b/' calc.py");
    expect(run.stdout).toMatch(/FAILED \(failures=1\)/);
  });
});
