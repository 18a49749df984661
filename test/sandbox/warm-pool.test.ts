import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, inject, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-client.js';
import { DockerSandbox } from '../../src/sandbox/docker-sandbox.js';
import { newRunId } from '../../src/sandbox/labels.js';
import { describeDocker, sandloopContainers } from '../helpers/docker.js';

/** What a call can observe about its container, which must not depend on the pool. */
const PROBE = [
  'hostname',
  'ls -A /tmp | wc -l',
  'cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.cfs_quota_us',
  'grep -E "^(CapEff|NoNewPrivs)" /proc/self/status',
  'id -u',
  'touch /root-write 2>&1 | sed "s/.*: //"',
  'env | sort | grep -v "^HOSTNAME=\\|^PWD=\\|^SHLVL=\\|^_="',
].join('; echo ---; ');

describeDocker('the warm pool (real Docker)', () => {
  const runIds: string[] = [];
  const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-pool-'));
  const make = async (warm: boolean) => {
    const runId = newRunId();
    runIds.push(runId);
    return new DockerSandbox({ docker: await connectDocker(), runId, image: inject('image'), workspace: taskDir, memoryBytes: 256 * 1024 ** 2, cpus: 0.5, pids: 128, maxOutput: 30_000, warm });
  };
  afterAll(() => {
    for (const id of runIds) expect(sandloopContainers(id)).toEqual([]);
  });

  it('gives calls containers as fresh as cold ones: new hostname, empty /tmp, the same limits', { timeout: 60_000 }, async () => {
    const warm = await make(true);
    const cold = await make(false);
    try {
      const w1 = await warm.exec(`${PROBE}; echo x > /tmp/left-behind`, { timeoutSeconds: 30 });
      const w2 = await warm.exec(PROBE, { timeoutSeconds: 30 });
      const c1 = await cold.exec(PROBE, { timeoutSeconds: 30 });
      const [h1, ...rest1] = w1.stdout.split('\n---\n');
      const [h2, ...rest2] = w2.stdout.split('\n---\n');
      const [h3, ...rest3] = c1.stdout.split('\n---\n');
      expect(new Set([h1, h2, h3]).size).toBe(3);
      expect(rest2).toEqual(rest1);
      expect(rest2).toEqual(rest3);
      expect(rest2[0]).toBe('0');
      expect(rest2[1]).toBe(`128\n${256 * 1024 ** 2}\n50000`);
      expect(rest2[4]).toBe('Read-only file system');
    } finally {
      await warm.close();
      await cold.close();
    }
  });

  it('the channel gives the container nothing: four FIFOs, no way to create host files, no other channel', { timeout: 60_000 }, async () => {
    const sandbox = await make(true);
    try {
      const r = await sandbox.exec(
        'ls -A /.sandloop | tr "\\n" " "; echo; stat -c %F /.sandloop/out; touch /.sandloop/new 2>&1 | sed "s/.*: //"; timeout 1 sh -c "echo hi > /.sandloop/cmd"; echo nobody-listens=$?; ls / | grep -c sandloop-chan',
        { timeoutSeconds: 30 },
      );
      expect(r.stdout).toBe('cmd err out status \nfifo\nRead-only file system\nnobody-listens=124\n0\n');
    } finally {
      await sandbox.close();
    }
  });

  it('runs the calls of one turn concurrently, each in its own container', { timeout: 60_000 }, async () => {
    const sandbox = await make(true);
    try {
      const started = Date.now();
      const results = await Promise.all(['a', 'b', 'c'].map((x) => sandbox.exec(`sleep 1; echo ${x}; hostname`, { timeoutSeconds: 30 })));
      expect(Date.now() - started).toBeLessThan(2900);
      expect(results.map((r) => r.stdout.split('\n')[0])).toEqual(['a', 'b', 'c']);
      expect(new Set(results.map((r) => r.containerId)).size).toBe(3);
    } finally {
      await sandbox.close();
    }
  });

  it('a background process does not outlive its call', { timeout: 60_000 }, async () => {
    const sandbox = await make(true);
    try {
      const r = await sandbox.exec('nohup sleep 1000 >/dev/null 2>&1 & setsid sleep 1000 & echo started', { timeoutSeconds: 30 });
      expect(r.stdout).toBe('started\n');
      expect(r.durationMs).toBeLessThan(5000);
      await new Promise((res) => setTimeout(res, 300));
      expect(sandloopContainers(runIds.at(-1)).length).toBeLessThanOrEqual(4); // only the pool's idle ones
    } finally {
      await sandbox.close();
    }
  });

  it('a flood costs the host at most the cap and returns at its timeout', { timeout: 60_000 }, async () => {
    const sandbox = await make(true);
    try {
      global.gc?.();
      const before = process.memoryUsage().rss;
      let maxRss = before;
      let ticks = 0;
      const probe = setInterval(() => {
        ticks++;
        maxRss = Math.max(maxRss, process.memoryUsage().rss);
      }, 50);
      const started = Date.now();
      const r = await sandbox.exec('yes', { timeoutSeconds: 4 });
      clearInterval(probe);
      expect(r).toMatchObject({ timedOut: true, truncated: true, exitCode: 124 });
      expect(Date.now() - started).toBeLessThan(6000);
      expect(maxRss - before).toBeLessThan(100 * 1024 ** 2);
      // The event loop kept turning during the flood (a 50 ms timer over ~4 s).
      expect(ticks).toBeGreaterThan(40);
    } finally {
      await sandbox.close();
    }
  });
});
