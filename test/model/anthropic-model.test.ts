import { afterEach, describe, expect, it } from 'vitest';
import { ModelError } from '../../src/errors.js';
import { AnthropicModel } from '../../src/model/anthropic-model.js';
import type { RetryNotice } from '../../src/model/model.js';
import { type FakeAnthropic, startFakeAnthropic } from '../fake-anthropic/server.js';

let fake: FakeAnthropic;
afterEach(async () => fake?.close());

const request = {
  system: 'sys',
  messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }],
  tools: [{ name: 'bash', description: 'run', input_schema: { type: 'object', properties: { command: { type: 'string' } } } }],
  maxTokens: 1000,
};

async function complete(maxRetries = 3) {
  const model = new AnthropicModel({ model: 'claude-test', apiKey: 'sk-test', baseURL: fake.url, maxRetries });
  const retries: RetryNotice[] = [];
  const response = await model.complete(request, { signal: new AbortController().signal, onRetry: (n) => retries.push(n) });
  return { response, retries };
}

const reply = { content: [{ type: 'text' as const, text: 'ok' }, { type: 'tool_use' as const, id: 'toolu_1', name: 'bash', input: { command: 'ls -la' } }] };

describe('AnthropicModel against the fake server', () => {
  it('streams a turn and returns its blocks, stop reason and usage', async () => {
    fake = await startFakeAnthropic({ turns: [reply] });
    const { response } = await complete();
    expect(response.content).toHaveLength(2);
    expect(response.content[0]).toMatchObject({ type: 'text', text: 'ok' });
    expect(response.content[1]).toMatchObject({ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls -la' } });
    expect(response.stopReason).toBe('tool_use');
    expect(response.usage.input_tokens).toBeGreaterThan(0);
    const sent = fake.requests[0]!;
    expect(sent.body).toMatchObject({ model: 'claude-test', system: 'sys', stream: true, max_tokens: 1000 });
    expect(sent.headers.authorization).toBe('Bearer sk-test');
  });

  it('retries 429 and 529, honouring retry-after, and reports each retry', async () => {
    fake = await startFakeAnthropic({
      turns: [
        { fault: 'http', status: 429, error_type: 'rate_limit_error', headers: { 'retry-after-ms': '20' } },
        { fault: 'http', status: 529, error_type: 'overloaded_error', headers: { 'retry-after': '0' } },
        reply,
      ],
    });
    const { response, retries } = await complete();
    expect(response.stopReason).toBe('tool_use');
    expect(retries.map((r) => [r.attempt, r.delayMs])).toEqual([[1, 20], [2, 0]]);
    expect(retries[0]!.reason).toMatch(/429 rate_limit_error/);
    expect(fake.requests).toHaveLength(3);
  });

  it('retries an overloaded_error that arrives in the middle of a stream', async () => {
    fake = await startFakeAnthropic({ turns: [{ fault: 'stream_error', error_type: 'overloaded_error', after_blocks: 1, content: reply.content }, reply] });
    const { retries } = await complete();
    expect(retries).toHaveLength(1);
    expect(retries[0]!.reason).toMatch(/mid-stream: overloaded_error/);
  });

  it('retries a connection reset mid-stream', async () => {
    fake = await startFakeAnthropic({ turns: [{ fault: 'reset', after_blocks: 1, content: reply.content }, reply] });
    const { retries } = await complete();
    expect(retries).toHaveLength(1);
    expect(retries[0]!.reason).toMatch(/connection/);
  });

  it('does not retry 401: a permanent ModelError naming the error', async () => {
    fake = await startFakeAnthropic({ turns: [{ fault: 'http', status: 401, error_type: 'authentication_error', message: 'invalid x-api-key' }] });
    const err = await complete().catch((e) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ kind: 'authentication_error', status: 401, permanent: true, message: 'API error 401 authentication_error: invalid x-api-key' });
    expect(fake.requests).toHaveLength(1);
  });

  it('gives up after maxRetries and says how many', async () => {
    const overloaded = { fault: 'http' as const, status: 529, error_type: 'overloaded_error', headers: { 'retry-after': '0' } };
    fake = await startFakeAnthropic({ turns: [overloaded, overloaded, overloaded] });
    const err = await complete(2).catch((e) => e);
    expect(err.message).toBe('API error 529 overloaded_error: Overloaded (after 2 retries)');
    expect(fake.requests).toHaveLength(3);
  });

  it('an abort during the backoff ends the call at once', async () => {
    fake = await startFakeAnthropic({ turns: [{ fault: 'http', status: 429, error_type: 'rate_limit_error', headers: { 'retry-after': '30' } }] });
    const model = new AnthropicModel({ model: 'm', apiKey: 'k', baseURL: fake.url });
    const controller = new AbortController();
    const started = Date.now();
    const pending = model.complete(request, { signal: controller.signal, onRetry: () => controller.abort() });
    await expect(pending).rejects.toMatchObject({ name: 'AbortedError' });
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
