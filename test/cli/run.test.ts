import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/types.js';
import { type FakeAnthropic, type FakeTurn, startFakeAnthropic } from '../fake-anthropic/server.js';
import { runAndSignal, runCli } from '../helpers/cli.js';
import { describeDocker, sandloopContainers } from '../helpers/docker.js';

const API_KEY = 'sk-ant-test-secret-key';
const bash = (command: string): FakeTurn => ({ content: [{ type: 'tool_use', name: 'bash', input: { command } }] });
const say = (text: string): FakeTurn => ({ content: [{ type: 'text', text }] });

/** The tool_result texts of the last user message of request i. */
function toolResults(fake: FakeAnthropic, i: number): { content: string; is_error?: boolean; tool_use_id: string }[] {
  const messages = fake.requests[i]!.body.messages;
  return messages.at(-1).content.filter((b: { type: string }) => b.type === 'tool_result');
}

describeDocker('sandloop run end to end (real SDK, fake server, real Docker)', () => {
  let fake: FakeAnthropic;
  let taskDir: string;
  const env = () => ({ ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: fake.url, MODEL_ID: 'claude-test', SANDLOOP_HOST_ONLY: 'host-only-value' });

  beforeEach(async () => {
    fake = await startFakeAnthropic({ apiKey: API_KEY });
    taskDir = mkdtempSync(join(tmpdir(), 'sandloop-cli-'));
  });
  afterEach(async () => fake.close());

  it('runs every tool call in its own container and feeds the results back', { timeout: 60_000 }, async () => {
    fake.enqueue(
      bash(`printf 'print("Hello, World!")\\n' > hello.py && python3 hello.py`),
      bash('hostname'),
      bash('hostname'),
      say('Created hello.py.'),
    );
    const run = await runCli(['run', '--task-dir', taskDir, '--output-format', 'json', 'Create hello.py'], { env: env() });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(taskDir, 'hello.py'), 'utf8')).toBe('print("Hello, World!")\n');

    const [hello] = toolResults(fake, 1);
    expect(hello!.content).toContain('Hello, World!');
    expect(hello!.content).toMatch(/^Exit code: 0 /m);
    const host1 = toolResults(fake, 2)[0]!.content.split('\n').at(-1);
    const host2 = toolResults(fake, 3)[0]!.content.split('\n').at(-1);
    expect(host1).toMatch(/^[0-9a-f]{12}$/);
    expect(host2).not.toBe(host1);

    const result = JSON.parse(run.stdout);
    expect(Object.keys(result).sort()).toEqual(['duration_ms', 'model', 'result', 'run_id', 'status', 'tool_calls', 'turns', 'usage'].sort());
    expect(result).toMatchObject({ status: 'completed', result: 'Created hello.py.', turns: 4, tool_calls: 3, model: 'claude-test' });
    expect(result.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number), cache_read_input_tokens: 0 });
    expect(sandloopContainers(result.run_id)).toEqual([]);
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it('holds the limits: timeout, truncation, no network, no host environment', { timeout: 90_000 }, async () => {
    fake.enqueue(
      bash('echo started; sleep 600'),
      bash('seq 1 2000000'),
      bash('getent hosts example.com || echo no-dns; curl -sS -m 3 http://93.184.215.14 || echo no-connect'),
      bash('env'),
      say('done'),
    );
    const transcript = join(taskDir, '..', `${taskDir.split('/').at(-1)}.jsonl`);
    const started = Date.now();
    const run = await runCli(
      ['run', '--task-dir', taskDir, '--timeout', '2', '--max-output', '2000', '--transcript', transcript, '--quiet', 'test the limits'],
      { env: env() },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(45_000);

    const timeout = toolResults(fake, 1)[0]!.content;
    expect(timeout).toMatch(/^Timed out after 2 s/);
    expect(timeout).toContain('Exit code: 124');
    expect(timeout).toContain('started');

    const seq = toolResults(fake, 2)[0]!.content;
    const body = seq.slice(seq.indexOf('--- stdout ---\n') + 15);
    expect(body.startsWith('1\n2\n3\n')).toBe(true);
    expect(body.endsWith('1999999\n2000000')).toBe(true);
    const marker = body.split('\n').find((l) => l.startsWith('[... '))!;
    expect(marker).toMatch(/characters and \d+ lines elided/);
    expect(body.length).toBeLessThanOrEqual(2000 + marker.length + 2);

    const net = toolResults(fake, 3)[0]!.content;
    expect(net).toContain('no-dns');
    expect(net).toContain('no-connect');

    const envOut = toolResults(fake, 4)[0]!.content;
    expect(envOut).not.toContain(API_KEY);
    expect(envOut).not.toContain('ANTHROPIC');
    expect(envOut).not.toContain('host-only-value');

    const events = readFileSync(transcript, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
    const calls = events.filter((e) => e.type === 'tool_call');
    expect(calls).toHaveLength(4);
    for (const key of ['command', 'exit_code', 'stdout', 'stderr', 'timed_out', 'truncated', 'duration_ms', 'container_id']) {
      expect(calls[0]).toHaveProperty(key);
    }
    expect(calls[0]).toMatchObject({ command: 'echo started; sleep 600', exit_code: 124, timed_out: true });
    expect(calls[1]).toMatchObject({ truncated: true, exit_code: 0 });
    expect(events[0]).toMatchObject({ type: 'system', subtype: 'init' });
    expect(events.at(-1)).toMatchObject({ type: 'result', status: 'completed', tool_calls: 4 });
  });

  it('the .env that holds the API key never reaches the container, even inside the task dir', { timeout: 30_000 }, async () => {
    writeFileSync(join(taskDir, '.env'), `ANTHROPIC_API_KEY=${API_KEY}\nANTHROPIC_BASE_URL=${fake.url}\n`);
    fake.enqueue(bash('cat .env; wc -c < .env'), say('done'));
    const run = await runCli(['run', '--quiet', 'read the env file'], { cwd: taskDir, cleanEnv: true });
    expect(run.code, run.stderr).toBe(0);
    const seen = toolResults(fake, 1)[0]!.content;
    expect(seen).not.toContain(API_KEY);
    expect(seen).toMatch(/^0$/m);
    expect(readFileSync(join(taskDir, '.env'), 'utf8')).toContain(API_KEY);
  });

  it('stream-json prints one event per line as the run happens; stdin prompt with -', { timeout: 30_000 }, async () => {
    fake.enqueue(bash('echo hi'), say('bye'));
    const run = await runCli(['run', '--task-dir', taskDir, '--output-format', 'stream-json', '-'], { env: env(), input: 'say hi\n' });
    expect(run.code, run.stderr).toBe(0);
    const events = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
    expect(events.map((e) => e.type)).toEqual(['system', 'user', 'assistant', 'tool_start', 'tool_call', 'assistant', 'result']);
    expect(events[1]).toMatchObject({ text: 'say hi' });
    expect(events[4]).toMatchObject({ stdout: 'hi\n', exit_code: 0 });
  });

  it('stops at --max-turns with exit 1', { timeout: 30_000 }, async () => {
    fake.enqueue(bash('true'), bash('true'), bash('true'));
    const run = await runCli(['run', '--task-dir', taskDir, '--max-turns', '2', '--output-format', 'json', 'loop'], { env: env() });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'max_turns', turns: 2 });
    expect(fake.requests).toHaveLength(2);
  });

  it('an API failure after retries is status error, exit 1; a rejected key is exit 2', { timeout: 30_000 }, async () => {
    const overloaded: FakeTurn = { fault: 'http', status: 529, error_type: 'overloaded_error', headers: { 'retry-after': '0' } };
    fake.enqueue(overloaded, overloaded);
    const run = await runCli(['run', '--task-dir', taskDir, '--max-retries', '1', '--output-format', 'json', 'x'], { env: env() });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'error', error: 'API error 529 overloaded_error: Overloaded (after 1 retry)' });

    const denied = await runCli(['run', '--task-dir', taskDir, 'x'], { env: { ...env(), ANTHROPIC_API_KEY: 'wrong-key' } });
    expect(denied.code).toBe(2);
    expect(denied.stderr).toMatch(/401 authentication_error/);
  });

  it('Ctrl-C kills the running container, removes it, prints what was done, exits 130', { timeout: 30_000 }, async () => {
    fake.enqueue(bash('echo first'), bash('sleep 600'));
    const run = await runAndSignal(['run', '--task-dir', taskDir, '--output-format', 'stream-json', 'go'], { env: env(), signal: 'SIGINT', command: 'sleep 600' });
    const { runId } = run;
    expect(run.code).toBe(130);
    expect(run.stderr).toContain('SIGINT: stopping the run');
    const events = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
    expect(events.at(-1)).toMatchObject({ type: 'result', status: 'aborted', tool_calls: 2 });
    expect(runId).not.toBe('');
    expect(sandloopContainers(runId)).toEqual([]);
  });

  it('files written by a non-root user belong to that user', { timeout: 30_000 }, async () => {
    const dockerGid = execFileSync('getent', ['group', 'docker'], { encoding: 'utf8' }).split(':')[2];
    chownSync(taskDir, 4242, 4242);
    const scriptDir = mkdtempSync(join(tmpdir(), 'sandloop-script-'));
    chmodSync(scriptDir, 0o755);
    const script = join(scriptDir, 'script.json');
    writeFileSync(script, JSON.stringify({ turns: [bash('id -u > whoami.txt'), say('ok')] }));
    const run = await runCli(['run', '--task-dir', taskDir, '--model', `scripted:${script}`, '--quiet', 'who am i'], {
      prefix: ['setpriv', '--reuid=4242', '--regid=4242', `--groups=${dockerGid}`],
      cwd: taskDir,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(taskDir, 'whoami.txt'), 'utf8')).toBe('4242\n');
    expect(statSync(join(taskDir, 'whoami.txt')).uid).toBe(4242);
  });
  it('the scripted model is clearly labelled', { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandloop-label-'));
    const script = join(dir, 's.json');
    writeFileSync(script, JSON.stringify({ turns: [say('hello from a script')] }));
    const run = await runCli(['run', '--task-dir', dir, '--model', `scripted:${script}`, 'hi'], { cleanEnv: true });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('scripted model');
    expect(run.stdout).toBe('hello from a script\n');
    expect(existsSync(script)).toBe(true);
  });
});

describe('sandloop run: bad input fails cleanly before any container starts', () => {
  const oneLine = (s: string) => s.trim().split('\n');

  it('a missing API key: exit 2, one line', async () => {
    const run = await runCli(['run', 'hello'], { cleanEnv: true, cwd: mkdtempSync(join(tmpdir(), 'sandloop-nokey-')) });
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toHaveLength(1);
    expect(run.stderr).toMatch(/^sandloop: error: ANTHROPIC_API_KEY is not set/);
  });

  it('a missing task dir: exit 2, one line', async () => {
    const run = await runCli(['run', '--task-dir', '/nonexistent/dir', 'hello'], { env: { ANTHROPIC_API_KEY: 'k' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('sandloop: error: --task-dir /nonexistent/dir does not exist\n');
  });

  it('an unknown flag: exit 2, one line', async () => {
    const run = await runCli(['run', '--bogus', 'hello']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('sandloop: error: Unknown argument: bogus\n');
  });

  it('a bad value: exit 2 quoting it', async () => {
    const run = await runCli(['run', '--timeout', 'abc', 'hello'], { env: { ANTHROPIC_API_KEY: 'k' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe("sandloop: error: --timeout must be a positive number of seconds, got 'abc'\n");
  });

  it('Docker not reachable: exit 3, says where it looked and how to start it', async () => {
    const run = await runCli(['run', 'hello'], { env: { ANTHROPIC_API_KEY: 'k', DOCKER_HOST: 'unix:///tmp/sandloop-no-docker.sock' } });
    expect(run.code).toBe(3);
    expect(oneLine(run.stderr)).toHaveLength(1);
    expect(run.stderr).toMatch(/Docker is not reachable \(tried DOCKER_HOST=unix:\/\/\/tmp\/sandloop-no-docker.sock: .*\)\. Start the daemon/);
  });

  it('no prompt and no TTY: exit 2', async () => {
    const run = await runCli(['run'], { env: { ANTHROPIC_API_KEY: 'k' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('sandloop: error: no prompt: pass it as arguments, or - to read it from stdin\n');
  });


  it('dangerous task dirs are refused unless --allow-dangerous-mount', async () => {
    for (const [dir, reason] of [['/', 'it is the root directory'], ['/etc', 'it is a system directory'], [homedir(), 'it is your home directory']] as const) {
      const run = await runCli(['run', '--task-dir', dir, 'x'], { env: { ANTHROPIC_API_KEY: 'k' } });
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`sandloop: error: --task-dir ${dir} is refused: ${reason}; pass --allow-dangerous-mount to mount it anyway\n`);
    }
    const withSocket = mkdtempSync(join(tmpdir(), 'sandloop-sock-'));
    const server = net.createServer().listen(join(withSocket, 'docker.sock'));
    await new Promise((r) => server.once('listening', r));
    const run = await runCli(['run', '--task-dir', withSocket, 'x'], { env: { ANTHROPIC_API_KEY: 'k' } });
    server.close();
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/is refused: it contains a Docker socket/);
  });
});

describeDocker('sandloop run: settings only the daemon can check fail before any container starts', () => {
  const script = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandloop-pre-'));
    writeFileSync(join(dir, 's.json'), JSON.stringify({ turns: [{ content: [{ type: 'text', text: 'x' }] }] }));
    return { dir, model: `scripted:${join(dir, 's.json')}` };
  };
  for (const [flag, value, message] of [
    ['--image', 'sandloop-no-such-image:1', /^sandloop: error: --image sandloop-no-such-image:1 does not exist; build it with/],
    ['--network', 'sandloop-no-such-net', /^sandloop: error: --network sandloop-no-such-net: no such Docker network/],
    ['--runtime', 'no-such-runtime', /^sandloop: error: --runtime no-such-runtime is not registered with the Docker daemon .*; to use it, register it/],
  ] as const) {
    it(`${flag} ${value}: exit 2, one line, nothing started`, { timeout: 30_000 }, async () => {
      const { dir, model } = script();
      const before = sandloopContainers().length;
      const run = await runCli(['run', '--task-dir', dir, '--model', model, flag, value, 'x']);
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(message);
      expect(sandloopContainers().length).toBeLessThanOrEqual(before);
    });
  }
});
