import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { type FakeAnthropic, startFakeAnthropic } from '../fake-anthropic/server.js';
import { CLI } from '../helpers/cli.js';
import { describeDocker } from '../helpers/docker.js';

/** Run the CLI on a real pseudo-terminal (util-linux `script`), typing `input`. */
function onTty(args: string[], input: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

describeDocker('sandloop run with no prompt on a TTY: the REPL', () => {
  let fake: FakeAnthropic;
  afterEach(async () => fake.close());

  it('carries history from one prompt to the next and ends on exit', { timeout: 30_000 }, async () => {
    fake = await startFakeAnthropic({
      turns: [
        { content: [{ type: 'tool_use', name: 'bash', input: { command: 'echo 41 > n.txt' } }] },
        { content: [{ type: 'text', text: 'stored' }] },
        { content: [{ type: 'text', text: 'it was 41' }] },
      ],
    });
    const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-repl-'));
    const { code, output } = await onTty(['run', '--task-dir', taskDir], 'store 41\nwhat was it?\nexit\n', {
      ANTHROPIC_API_KEY: 'k',
      ANTHROPIC_BASE_URL: fake.url,
    });
    expect(code, output).toBe(0);
    expect(output).toContain('sandloop >> ');
    expect(output).toContain('it was 41');
    expect(fake.requests).toHaveLength(3);
    const last = fake.requests[2]!.body.messages as { role: string; content: { type: string; text?: string }[] }[];
    expect(last.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(last[0]!.content[0]!.text).toBe('store 41');
    expect(last.at(-1)!.content.at(-1)!.text).toBe('what was it?');
  });
});
