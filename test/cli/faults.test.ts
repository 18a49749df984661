import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { RunEvent } from '../../src/types.js';
import { type FakeAnthropic, type FakeTurn, startFakeAnthropic } from '../fake-anthropic/server.js';
import { runAndSignal, runCli } from '../helpers/cli.js';
import { describeDocker, sandloopContainers } from '../helpers/docker.js';
import { type StallingProxy, startStallingProxy } from '../helpers/docker-proxy.js';

const bash = (command: string): FakeTurn => ({ content: [{ type: 'tool_use', name: 'bash', input: { command } }] });
const say = (text: string): FakeTurn => ({ content: [{ type: 'text', text }] });
const T = { timeout: 60_000 };

describeDocker('model and API faults through the real CLI', () => {
  let fake: FakeAnthropic;
  let taskDir: string;
  let transcript: string;
  const env = () => ({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url });
  const events = () => readFileSync(transcript, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
  beforeEach(async () => {
    fake = await startFakeAnthropic();
    taskDir = mkdtempSync(join(tmpdir(), 'sandloop-fault-'));
    transcript = join(taskDir, '..', `${taskDir.split('/').at(-1)}.jsonl`);
  });
  afterEach(async () => fake.close());

  it('429 and 529 are retried honouring retry-after; each retry is in the transcript and on screen', T, async () => {
    fake.enqueue(
      { fault: 'http', status: 429, error_type: 'rate_limit_error', headers: { 'retry-after': '1' } },
      { fault: 'http', status: 529, error_type: 'overloaded_error', headers: { 'retry-after-ms': '50' } },
      bash('echo after-retries'),
      say('ok'),
    );
    const started = Date.now();
    const run = await runCli(['run', '--task-dir', taskDir, '--transcript', transcript, '--verbose', 'x'], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    expect(Date.now() - started).toBeGreaterThan(1000);
    const retries = events().filter((e) => e.type === 'retry');
    expect(retries).toMatchObject([
      { attempt: 1, delay_ms: 1000, reason: expect.stringMatching(/429 rate_limit_error/) },
      { attempt: 2, delay_ms: 50, reason: expect.stringMatching(/529 overloaded_error/) },
    ]);
    expect(run.stderr).toMatch(/retry 1 in 1\.0 s: API error 429 rate_limit_error/);
    expect(run.stderr).toMatch(/retry 2 in 0\.1 s: API error 529 overloaded_error/);
  });

  it('an overloaded_error mid-stream and a connection reset mid-stream retry the turn', T, async () => {
    const reply = bash('echo survived');
    fake.enqueue(
      { fault: 'stream_error', error_type: 'overloaded_error', after_blocks: 0, content: (reply as { content: never[] }).content },
      { fault: 'reset', after_blocks: 1, content: (reply as { content: never[] }).content },
      reply,
      say('ok'),
    );
    const run = await runCli(['run', '--task-dir', taskDir, '--transcript', transcript, '--quiet', 'x'], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    const all = events();
    expect(all.filter((e) => e.type === 'retry').map((e) => (e as { reason: string }).reason)).toEqual([
      expect.stringMatching(/mid-stream: overloaded_error/),
      expect.stringMatching(/connection lost mid-stream/),
    ]);
    // The reset attempt had already streamed a complete tool_use, which started; it is kept, marked discarded.
    const calls = all.filter((e) => e.type === 'tool_call');
    expect(calls.map((c) => (c as { discarded?: boolean }).discarded ?? false)).toEqual([true, false]);
    expect(all.at(-1)).toMatchObject({ type: 'result', tool_calls: 1 });
  });

  it('401 and 403 are clear errors, not retried, exit 2', T, async () => {
    for (const [status, type] of [[401, 'authentication_error'], [403, 'permission_error']] as const) {
      fake.enqueue({ fault: 'http', status, error_type: type, message: `fake ${type}` });
      const before = fake.requests.length;
      const run = await runCli(['run', '--task-dir', taskDir, '--output-format', 'json', 'x'], { env: env() });
      expect(run.code).toBe(2);
      expect(JSON.parse(run.stdout)).toMatchObject({ status: 'error', error_type: type, error: `API error ${status} ${type}: fake ${type}` });
      expect(fake.requests.length - before).toBe(1);
    }
  });

  it('--max-retries is the budget: the run never loops forever', T, async () => {
    const overloaded: FakeTurn = { fault: 'http', status: 529, error_type: 'overloaded_error', headers: { 'retry-after-ms': '1' } };
    fake.enqueue(overloaded, overloaded, overloaded, overloaded, overloaded);
    const run = await runCli(['run', '--task-dir', taskDir, '--max-retries', '3', '--output-format', 'json', 'x'], { env: env() });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).error).toBe('API error 529 overloaded_error: Overloaded (after 3 retries)');
    expect(fake.requests).toHaveLength(4);
  });

  it('400 "prompt is too long" shrinks old tool results, retries once, then stops clearly', T, async () => {
    const tooLong: FakeTurn = { fault: 'http', status: 400, error_type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' };
    fake.enqueue(bash('seq 1 1000'), bash('echo two'), bash('echo three'), tooLong, say('fits now'));
    const ok = await runCli(['run', '--task-dir', taskDir, '--output-format', 'json', 'x'], { env: env() });
    expect(ok.code, ok.stderr).toBe(0);
    const retried = fake.requests.at(-1)!.body.messages as { role: string; content: { type: string; content?: string }[] }[];
    expect(retried[2]!.content[0]!.content).toBe('[output removed: the conversation outgrew the context window]');

    fake.enqueue(bash('seq 1 1000'), bash('echo two'), bash('echo three'), tooLong, tooLong);
    const stopped = await runCli(['run', '--task-dir', taskDir, '--output-format', 'json', 'x'], { env: env() });
    expect(stopped.code).toBe(1);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ status: 'error', error_type: 'prompt_too_long' });
  });

  it('SIGTERM removes everything before exit, within 5 s', T, async () => {
    fake.enqueue(bash('sleep 600'));
    const run = await runAndSignal(['run', '--task-dir', taskDir, '--output-format', 'stream-json', 'x'], { env: env(), signal: 'SIGTERM' });
    const { runId, signalledAt } = run;
    expect(run.code).toBe(130);
    expect(Date.now() - signalledAt).toBeLessThan(5000);
    expect(sandloopContainers(runId)).toEqual([]);
  });
});

describeDocker('a stalled Docker daemon becomes a clear error, not a hung run', () => {
  let proxy: StallingProxy;
  let fake: FakeAnthropic;
  afterEach(async () => {
    await proxy.close();
    await fake.close();
  });

  for (const endpoint of ['create', 'start'] as const) {
    it(`POST /containers/${endpoint} never answers`, T, async () => {
      proxy = await startStallingProxy((method, path) => method === 'POST' && (endpoint === 'create' ? path.startsWith('/containers/create') : /^\/containers\/[^/]+\/start/.test(path)));
      fake = await startFakeAnthropic({ turns: [bash('echo hi'), say('gave up on docker')] });
      const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-stall-'));
      const started = Date.now();
      const run = await runCli(['run', '--task-dir', taskDir, '--docker-timeout', '2', '--output-format', 'stream-json', 'x'], {
        env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url, DOCKER_HOST: proxy.host },
      });
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(run.code, run.stderr).toBe(0);
      const all = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
      const call = all.find((e) => e.type === 'tool_call') as { is_error: boolean; error: string };
      expect(call.is_error).toBe(true);
      expect(call.error).toBe(`The sandbox failed to run the command: docker ${endpoint} did not answer within 2 s`);
      expect(proxy.stalled.length).toBeGreaterThan(0);
      const runId = (all[0] as { run_id: string }).run_id;
      expect(sandloopContainers(runId)).toEqual([]);
    });
  }
});
