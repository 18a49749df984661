import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { describeDocker } from '../helpers/docker.js';
import { hostile } from './harness.js';

const T = { timeout: 90_000 };

describeDocker('adversarial: resource bombs', () => {
  it('a fork bomb hits the pids limit; the host keeps its processes', T, async () => {
    const hostPids = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).length;
    const before = hostPids();
    let peak = before;
    const watch = setInterval(() => (peak = Math.max(peak, hostPids())), 100);
    // Every process forks forever; the ones that hit the limit say so and wait, so the call runs to its timeout.
    const bomb = `python3 -c "
import os, time
while True:
    try:
        os.fork()
    except OSError as e:
        print('fork failed:', e.strerror, flush=True)
        time.sleep(100)
"`;
    const run = await hostile(bomb, { flags: ['--timeout', '5', '--pids', '64'] });
    clearInterval(watch);
    // Truthful: the bomb ran into the limit and was stopped at the timeout.
    expect(run.call.timed_out).toBe(true);
    expect(run.call.stdout).toMatch(/fork failed: Resource temporarily unavailable/);
    expect(run.seen).toMatch(/^Timed out after 5 s/);
    // The host: at most the pids limit (plus the container's own helpers) ever appeared.
    expect(peak - before).toBeLessThan(64 + 40);
  });

  it('a memory bomb is reported as out of memory, not as a timeout', T, async () => {
    const run = await hostile('python3 -c "b = bytearray(3 * 1024**3)"; echo survived-the-bomb', { flags: ['--memory', '256m'] });
    expect(run.call).toMatchObject({ oom_killed: true, timed_out: false, exit_code: 0 });
    expect(run.call.stderr).toMatch(/Killed/);
  });

  it('an out-of-memory kill of the whole command is reported with exit 137', T, async () => {
    const run = await hostile('exec python3 -c "b = bytearray(3 * 1024**3)"', { flags: ['--memory', '256m'] });
    expect(run.call).toMatchObject({ oom_killed: true, timed_out: false, exit_code: 137 });
    expect(run.seen).toMatch(/^Killed: out of memory/);
  });

  it('filling /tmp stops at the tmpfs cap', T, async () => {
    const run = await hostile('dd if=/dev/zero of=/tmp/fill bs=1M count=1024 status=none; echo dd=$?; du -m /tmp/fill | cut -f1');
    expect(run.call.stderr).toMatch(/No space left on device/);
    const [dd, size] = run.call.stdout.trim().split('\n');
    expect(dd).toBe('dd=1');
    expect(Number(size)).toBeLessThanOrEqual(256);
  });

  it('a huge file in /workspace is capped by --workspace-max', T, async () => {
    const run = await hostile('head -c 300m /dev/zero > /workspace/huge; echo head=$?', { flags: ['--workspace-max', '20m'] });
    expect(run.call.stdout).toBe('head=153\n');
    expect(run.call.stderr).toMatch(/File size limit exceeded/);
    expect(statSync(join(run.taskDir, 'huge')).size).toBeLessThanOrEqual(20 * 1024 ** 2);
  });

  it('a CPU spin is held to --cpus and the host loop stays responsive', T, async () => {
    let ticks = 0;
    const tick = setInterval(() => ticks++, 50);
    const started = Date.now();
    const spin =
      'f=/sys/fs/cgroup/cpuacct/cpuacct.usage; a=$(cat $f); for i in 1 2 3 4; do timeout 4 sh -c "while :; do :; done" & done; wait; b=$(cat $f); echo cpu_ms=$(( (b - a) / 1000000 ))';
    const run = await hostile(spin, { flags: ['--cpus', '0.5'] });
    clearInterval(tick);
    const cpuMs = Number(/cpu_ms=(\d+)/.exec(run.call.stdout)![1]);
    // Four spinners for 4 s could burn 8 s of CPU on two cores; half a CPU allows about 2 s.
    expect(cpuMs).toBeLessThan(2600);
    expect(cpuMs).toBeGreaterThan(1000);
    const expected = (Date.now() - started) / 50;
    expect(ticks).toBeGreaterThan(expected * 0.8);
  });
});
