import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { RunEvent, ToolCallEvent } from '../../src/types.js';
import { startFakeAnthropic } from '../fake-anthropic/server.js';
import { type CliRun, runCli } from '../helpers/cli.js';
import { sandloopContainers } from '../helpers/docker.js';

export const API_KEY = 'sk-ant-adversarial-secret';
/** Set on the host only; it must never show up inside a container. */
export const HOST_SECRET = 'host-only-secret-value-7f3a';

export interface HostileRun {
  cli: CliRun;
  events: RunEvent[];
  /** The hostile call as the transcript records it. */
  call: ToolCallEvent;
  /** The tool_result text the model received for it. */
  seen: string;
  runId: string;
  taskDir: string;
}

/**
 * Run one hostile command through the real loop: the real CLI and SDK, the
 * fake server playing the model, real Docker, default flags plus `flags`.
 * Then assert what every adversarial case must show: the run went on to its
 * next turn (a harmless command that works) and ended normally, leaving no
 * container behind. The caller asserts that the host is unaffected and that
 * the result told the truth.
 */
export async function hostile(command: string, options: { flags?: string[]; taskDir?: string; textOutput?: boolean } = {}): Promise<HostileRun> {
  const fake = await startFakeAnthropic({
    apiKey: API_KEY,
    turns: [
      { content: [{ type: 'tool_use', name: 'bash', input: { command } }] },
      { content: [{ type: 'tool_use', name: 'bash', input: { command: 'echo next-turn-ok' } }] },
      { content: [{ type: 'text', text: 'survived' }] },
    ],
  });
  const taskDir = options.taskDir ?? mkdtempSync(join(tmpdir(), 'sandloop-adv-'));
  const transcript = join(mkdtempSync(join(tmpdir(), 'sandloop-adv-log-')), 'events.jsonl');
  try {
    const cli = await runCli(
      ['run', '--task-dir', taskDir, '--transcript', transcript, ...(options.textOutput ? [] : ['--output-format', 'stream-json']), ...(options.flags ?? []), 'attack'],
      { env: { ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: fake.url, SANDLOOP_HOST_SECRET: HOST_SECRET } },
    );
    const { readFileSync } = await import('node:fs');
    const events = readFileSync(transcript, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
    const result = events.at(-1);
    expect(cli.code, cli.stderr).toBe(0);
    expect(result).toMatchObject({ type: 'result', status: 'completed', turns: 3, tool_calls: 2 });
    const calls = events.filter((e): e is ToolCallEvent => e.type === 'tool_call');
    expect(calls[1]).toMatchObject({ command: 'echo next-turn-ok', exit_code: 0, stdout: 'next-turn-ok\n' });
    const runId = (events[0] as { run_id: string }).run_id;
    expect(sandloopContainers(runId)).toEqual([]);
    const seen = (fake.requests[1]!.body.messages.at(-1).content[0] as { content: string }).content;
    return { cli, events, call: calls[0]!, seen, runId, taskDir };
  } finally {
    await fake.close();
  }
}

/** Runtimes the escape cases run under: runc always; runsc when registered, and required under CI=true. */
export function escapeRuntimes(): string[] {
  let runtimes: Record<string, unknown> = {};
  try {
    runtimes = JSON.parse(execFileSync('docker', ['info', '--format', '{{json .Runtimes}}'], { encoding: 'utf8' }));
  } catch {
    return ['runc'];
  }
  if ('runsc' in runtimes) return ['runc', 'runsc'];
  if (process.env.CI === 'true') throw new Error('CI=true but the Docker daemon has no runsc runtime: run .ci/setup-runsc.sh');
  process.stderr.write('\n!!! runsc is not registered: the escape cases run under runc only (see .ci/setup-runsc.sh)\n\n');
  return ['runc'];
}

/** Processes on the host whose command line matches. */
export function hostProcesses(pattern: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch (err) {
    // pgrep exits 1 when nothing matches; anything else (pgrep missing) must not pass as "no process".
    if ((err as { status?: number }).status === 1) return [];
    throw err;
  }
}
