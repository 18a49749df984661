import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { describeDocker } from '../helpers/docker.js';

describeDocker('sandloop demo', () => {
  it('plays the seed prompts with no API key, in real containers, and says it is scripted', { timeout: 60_000 }, async () => {
    const run = await runCli(['demo'], { cleanEnv: true });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("scripted model: the model's turns are replayed from a file");
    expect(run.stderr).toContain('> Create a file called hello.py that prints "Hello, World!"');
    expect(run.stderr).toContain('  Hello, World!');
    expect(run.stderr).toContain('./hello.py');
    const workspace = /The demo's workspace is (\S+) /.exec(run.stderr)![1]!;
    expect(readFileSync(join(workspace, 'hello.py'), 'utf8')).toBe('print("Hello, World!")\n');
    expect(existsSync(join(workspace, '.git'))).toBe(false);
    // Three prompts, two turns each: the answers are on stdout.
    expect(run.stdout.trim().split('\n')).toHaveLength(3);
  });
});
