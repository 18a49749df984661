import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runAndSignal, runCli } from '../helpers/cli.js';
import { describeDocker, sandloopContainers } from '../helpers/docker.js';

function script(turns: object[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandloop-kill-'));
  const file = join(dir, 'script.json');
  writeFileSync(file, JSON.stringify({ turns }));
  return file;
}
const bash = (command: string) => ({ content: [{ type: 'tool_use', name: 'bash', input: { command } }] });

describeDocker('cleanup that survives a kill -9', () => {
  it('kill -9 mid-call leaves containers that the next start-up sweep removes', { timeout: 60_000 }, async () => {
    const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-kill-ws-'));
    const killed = await runAndSignal(['run', '--task-dir', taskDir, '--model', `scripted:${script([bash('sleep 600')])}`, '--output-format', 'stream-json', 'x'], {
      signal: 'SIGKILL',
      delayMs: 500,
    });
    const runId = killed.runId;
    expect(killed.signal).toBe('SIGKILL');
    expect(sandloopContainers(runId).length).toBeGreaterThan(0);

    const next = await runCli(['run', '--task-dir', taskDir, '--model', `scripted:${script([{ content: [{ type: 'text', text: 'hi' }] }])}`, '--quiet', 'y']);
    expect(next.code, next.stderr).toBe(0);
    expect(sandloopContainers(runId)).toEqual([]);
  });

  it('sandloop gc --dry-run lists leftovers of dead runs, gc removes them', { timeout: 60_000 }, async () => {
    const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-gc-ws-'));
    const { runId } = await runAndSignal(['run', '--task-dir', taskDir, '--model', `scripted:${script([bash('sleep 600')])}`, '--output-format', 'stream-json', 'x'], {
      signal: 'SIGKILL',
      delayMs: 500,
    });
    const left = sandloopContainers(runId);
    expect(left.length).toBeGreaterThan(0);

    const dry = await runCli(['gc', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`would remove container ${left[0]!.slice(0, 12)} run ${runId}`);
    expect(sandloopContainers(runId)).toEqual(left);

    const gc = await runCli(['gc']);
    expect(gc.code).toBe(0);
    expect(gc.stdout).toContain(`removed container ${left[0]!.slice(0, 12)} run ${runId}`);
    expect(sandloopContainers(runId)).toEqual([]);
  });

  it('a reader that closes stdout early (| head -1) ends the run with cleanup, not a crash', { timeout: 60_000 }, async () => {
    const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-epipe-'));
    let runId = '';
    const run = await runCli(['run', '--task-dir', taskDir, '--model', `scripted:${script([bash('echo one'), bash('sleep 5'), { content: [{ type: 'text', text: 'x' }] }])}`, '--output-format', 'stream-json', 'x'], {
      onSpawn: (child) =>
        child.stdout!.once('data', (d: Buffer) => {
          runId = (JSON.parse(d.toString().split('\n')[0]!) as { run_id: string }).run_id;
          child.stdout!.destroy();
        }),
    });
    expect(run.code).toBe(130);
    expect(run.stderr).not.toMatch(/EPIPE|Unhandled|at .*\.js:\d+/);
    expect(sandloopContainers(runId)).toEqual([]);
  });
});
