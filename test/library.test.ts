import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { describeDocker, sandloopContainers } from './helpers/docker.js';

describeDocker("import { runAgent } from 'sandloop'", () => {
  it('runs one episode with an injected model and returns the JSON result object', { timeout: 30_000 }, async () => {
    const { runAgent, ScriptedModel } = await import('sandloop');
    const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-lib-'));
    const types: string[] = [];
    const result = await runAgent({
      prompt: 'write a file',
      taskDir,
      model: new ScriptedModel([
        { content: [{ type: 'tool_use', id: 't1', name: 'bash', input: { command: 'echo from-library > out.txt' } }] },
        { content: [{ type: 'text', text: 'wrote out.txt' }] },
      ]),
      onEvent: (e) => types.push(e.type),
    });
    expect(result).toMatchObject({ status: 'completed', result: 'wrote out.txt', turns: 2, tool_calls: 1, model: 'scripted:inline' });
    expect(result.messages).toHaveLength(4);
    expect(readFileSync(join(taskDir, 'out.txt'), 'utf8')).toBe('from-library\n');
    expect(types).toEqual(['system', 'user', 'assistant', 'tool_start', 'tool_call', 'assistant', 'result']);
    expect(sandloopContainers(result.run_id)).toEqual([]);
  });

  it('throws ConfigError before any container for a bad option', async () => {
    const { runAgent, ConfigError } = await import('sandloop');
    await expect(runAgent({ prompt: 'x', model: 'scripted:/nope.json', timeout: -1 })).rejects.toBeInstanceOf(ConfigError);
  });
});
