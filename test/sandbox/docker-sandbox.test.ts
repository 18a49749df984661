import { chmodSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-client.js';
import { DockerSandbox, type DockerSandboxOptions } from '../../src/sandbox/docker-sandbox.js';
import { newRunId } from '../../src/sandbox/labels.js';
import { describeDocker, sandloopContainers } from '../helpers/docker.js';

describeDocker('DockerSandbox (real Docker)', () => {
  const runId = newRunId();
  const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-sbx-'));
  let sandbox: DockerSandbox;
  const make = async (overrides: Partial<DockerSandboxOptions> = {}) =>
    new DockerSandbox({
      docker: await connectDocker(),
      runId,
      image: inject('image'),
      workspace: taskDir,
      memoryBytes: 512 * 1024 ** 2,
      cpus: 1,
      pids: 256,
      maxOutput: 30_000,
      ...overrides,
    });
  const exec = (command: string, timeoutSeconds = 60) => sandbox.exec(command, { timeoutSeconds });

  beforeAll(async () => {
    sandbox = await make();
  });
  afterAll(async () => {
    await sandbox.close();
    expect(sandloopContainers(runId)).toEqual([]);
  });

  it('runs each call in a fresh container: /tmp is empty again, /workspace persists', { timeout: 30_000 }, async () => {
    const first = await exec('echo scratch > /tmp/scratch && echo kept > /workspace/kept.txt && hostname');
    expect(first.exitCode).toBe(0);
    const second = await exec('ls -A /tmp; cat /workspace/kept.txt; hostname');
    expect(second.stdout).not.toContain('scratch');
    expect(second.stdout).toContain('kept');
    expect(second.containerId).not.toBe(first.containerId);
    expect(second.stdout.trim().split('\n').at(-1)).not.toBe(first.stdout.trim());
    expect(readFileSync(join(taskDir, 'kept.txt'), 'utf8')).toBe('kept\n');
  });

  it('reports exit codes and stderr separately', { timeout: 30_000 }, async () => {
    const r = await exec('echo out; echo oops >&2; exit 3');
    expect(r).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'oops\n', timedOut: false, oomKilled: false, truncated: false });
  });

  it('times out: kills the command, keeps what it printed, exit 124, in well under 10 s', { timeout: 30_000 }, async () => {
    const started = Date.now();
    const r = await exec('echo before-sleep; sleep 600', 2);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r).toMatchObject({ timedOut: true, exitCode: 124, oomKilled: false, timeoutSeconds: 2 });
    expect(r.stdout).toContain('before-sleep');
  });

  it('cuts huge output to head + marker + tail while host memory stays bounded', { timeout: 60_000 }, async () => {
    const r = await exec('seq 1 2000000');
    expect(r.truncated).toBe(true);
    expect(r.stdout.startsWith('1\n2\n3\n')).toBe(true);
    expect(r.stdout.endsWith('1999999\n2000000\n')).toBe(true);
    const lines = r.stdout.split('\n');
    const marker = lines.find((l) => l.startsWith('[... '))!;
    expect(marker).toMatch(/characters and \d+ lines elided; the output was 14888896 characters, 2000000 lines/);
    expect(r.stdout.length).toBeLessThanOrEqual(30_000 + marker.length + 2);

    global.gc?.();
    const before = process.memoryUsage().rss;
    const big = await exec('head -c 300000000 /dev/zero | tr "\\0" "a"');
    expect(big.truncated).toBe(true);
    expect(big.stdout.length).toBeLessThan(31_000);
    expect(process.memoryUsage().rss - before).toBeLessThan(150 * 1024 ** 2);
  });

  it('has no network by default', { timeout: 30_000 }, async () => {
    const r = await exec('getent hosts example.com; echo dns=$?; curl -sS -m 3 http://1.1.1.1 >/dev/null; echo curl=$?');
    expect(r.stdout).toMatch(/dns=2/);
    expect(r.stdout).not.toMatch(/curl=0/);
  });

  it('sees none of the host environment: only HOME, LANG, TERM, PATH and --env', { timeout: 30_000 }, async () => {
    process.env.SANDLOOP_HOST_ONLY_VAR = 'host-secret';
    const withEnv = await make({ env: ['GIVEN=yes'] });
    const r = await withEnv.exec('env', { timeoutSeconds: 30 });
    expect(r.stdout).not.toContain('host-secret');
    expect(r.stdout).not.toContain('ANTHROPIC');
    expect(r.stdout).toContain('GIVEN=yes');
    expect(r.stdout).toContain('HOME=/home/sandbox');
  });

  it('is hardened: read-only root, no capabilities, pids and memory limits, writable HOME', { timeout: 60_000 }, async () => {
    const r = await exec(
      'touch /etc/x 2>&1; grep CapEff /proc/self/status; cat /sys/fs/cgroup/pids/pids.max; cat /sys/fs/cgroup/memory/memory.limit_in_bytes; cd ~ && git config --global user.name t && echo home-ok',
    );
    expect(r.stdout).toContain('Read-only file system');
    expect(r.stdout).toMatch(/CapEff:\s+0000000000000000/);
    expect(r.stdout).toContain('256\n');
    expect(r.stdout).toContain(`${512 * 1024 ** 2}\n`);
    expect(r.stdout).toContain('home-ok');
  });

  it('reports an out-of-memory kill as such, not as a timeout', { timeout: 60_000 }, async () => {
    const small = await make({ memoryBytes: 64 * 1024 ** 2 });
    const r = await small.exec('python3 -c "x = bytearray(512 * 1024 * 1024)"', { timeoutSeconds: 50 });
    expect(r).toMatchObject({ oomKilled: true, timedOut: false, exitCode: 137 });
  });

  it('runs as the given uid:gid, so files in the task dir belong to that user', { timeout: 30_000 }, async () => {
    const shared = mkdtempSync(join(tmpdir(), 'sandloop-owner-'));
    chmodSync(shared, 0o777);
    const asUser = await make({ user: '4242:4343', workspace: shared });
    const r = await asUser.exec('id -u; id -g; echo hi > /tmp/t && echo tmp-ok; mkdir -p sub && touch sub/owned', { timeoutSeconds: 30 });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('4242\n4343\ntmp-ok');
    expect(statSync(join(shared, 'sub', 'owned'))).toMatchObject({ uid: 4242, gid: 4343 });
  });

  it('aborting kills the running command at once', { timeout: 30_000 }, async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 500);
    const started = Date.now();
    const r = await sandbox.exec('sleep 600', { timeoutSeconds: 600, signal: controller.signal });
    expect(r).toMatchObject({ aborted: true, timedOut: false, exitCode: 130 });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
