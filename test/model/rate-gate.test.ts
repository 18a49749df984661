import { afterEach, expect, it } from 'vitest';
import { AnthropicModel } from '../../src/model/anthropic-model.js';
import { RateGate } from '../../src/model/rate-gate.js';
import { type FakeAnthropic, startFakeAnthropic } from '../fake-anthropic/server.js';

let fake: FakeAnthropic;
afterEach(async () => fake?.close());

const request = { system: 's', messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }], tools: [], maxTokens: 100 };

it('a 429 seen by one episode makes every episode sharing the gate wait', async () => {
  fake = await startFakeAnthropic({
    turns: [{ fault: 'http', status: 429, error_type: 'rate_limit_error', headers: { 'retry-after-ms': '800' } }, { content: [{ type: 'text', text: 'a' }] }, { content: [{ type: 'text', text: 'b' }] }],
  });
  const gate = new RateGate();
  const make = () => new AnthropicModel({ model: 'm', apiKey: 'k', baseURL: fake.url, gate });
  const signal = new AbortController().signal;
  const first = make().complete(request, { signal });
  // The second episode starts after the first was told to back off.
  while (fake.requests.length < 1) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50));
  const started = Date.now();
  await make().complete(request, { signal });
  expect(Date.now() - started).toBeGreaterThan(600);
  await first;
});
