import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { runAgent } from '../src/session.js';
import type { RunEvent } from '../src/types.js';
import { type FakeAnthropic, startFakeAnthropic } from './fake-anthropic/server.js';
import { describeDocker } from './helpers/docker.js';

describeDocker('streaming tool execution (real SDK, fake server, real Docker, warm pool)', () => {
  let fake: FakeAnthropic;
  afterEach(async () => fake.close());

  it('starts each call when its block completes, while the reply still streams', { timeout: 60_000 }, async () => {
    const stamp = (name: string) => ({ type: 'tool_use' as const, name: 'bash', input: { command: `echo ${name} $(date +%s%3N)` } });
    fake = await startFakeAnthropic({
      turns: [
        { content: [{ type: 'text', text: 'three at once' }, stamp('a'), stamp('b'), stamp('c')], latency_ms: 1000 },
        { content: [{ type: 'text', text: 'done' }] },
      ],
    });
    const at: Record<string, number> = {};
    const result = await runAgent({
      prompt: 'go',
      taskDir: mkdtempSync(join(tmpdir(), 'sandloop-stream-')),
      apiKey: 'k',
      baseURL: fake.url,
      model: 'claude-test',
      onEvent: (e: RunEvent) => {
        if (e.type === 'assistant' && e.turn === 1) at.streamEnd = Date.now();
        if (e.type === 'tool_call') at[`result_${e.tool_use_id}`] = Date.now();
      },
    });
    expect(result.status).toBe('completed');
    const results = (fake.requests[1]!.body.messages.at(-1).content as { content: string }[]).map((r) => r.content);
    const ran = results.map((text) => Number(/(?:a|b|c) (\d+)/.exec(text)![1]));
    // The first block completes about a third of the way into a 1 s stream: it ran long before the end.
    expect(at.streamEnd! - ran[0]!).toBeGreaterThan(300);
    expect(ran[0]).toBeLessThan(ran[1]!);
    expect(ran[1]).toBeLessThan(ran[2]!);
    const lastResult = Math.max(...Object.entries(at).filter(([k]) => k.startsWith('result_')).map(([, v]) => v));
    // The bench measures the real figure (within 150 ms); here only a loose bound, as CI machines are noisy.
    expect(lastResult - at.streamEnd!).toBeLessThan(1000);
  });
});
