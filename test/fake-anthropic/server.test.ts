import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic, type FakeTurn } from './server.js';

const MODEL = 'claude-fake-1';
const USER = [{ role: 'user' as const, content: 'hello' }];
const BASH_TOOL = {
  name: 'bash',
  description: 'run a command',
  input_schema: { type: 'object' as const, properties: { command: { type: 'string' } }, required: ['command'] },
};

let fake: FakeAnthropic | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function start(turns: FakeTurn[] = [], apiKey?: string) {
  fake = await startFakeAnthropic({ turns, apiKey });
  return fake;
}

function client(f: FakeAnthropic, maxRetries = 0) {
  return new Anthropic({ apiKey: 'test-key', baseURL: f.url, maxRetries });
}

/** POST a raw body (bypassing the SDK's own checks). */
async function rawPost(f: FakeAnthropic, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${f.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('fake Anthropic server with the real SDK', () => {
  it('messages.create returns the scripted text and tool_use', async () => {
    const f = await start([
      {
        content: [
          { type: 'text', text: 'Let me look.' },
          { type: 'tool_use', name: 'bash', input: { command: 'ls -la' } },
        ],
      },
    ]);
    const msg = await client(f).messages.create({ model: MODEL, max_tokens: 1024, messages: USER, tools: [BASH_TOOL] });
    expect(msg.id).toBe('msg_fake_1');
    expect(msg.type).toBe('message');
    expect(msg.role).toBe('assistant');
    expect(msg.model).toBe(MODEL);
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.stop_sequence).toBeNull();
    expect(msg.content).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'toolu_fake_1', name: 'bash', input: { command: 'ls -la' } },
    ]);
    expect(msg.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    expect(msg.usage.output_tokens).toBeGreaterThan(0);
    expect(msg._request_id).toMatch(/^req_fake_/);
    expect(f.remaining()).toBe(0);
  });

  it('honours explicit stop_reason and usage overrides', async () => {
    const f = await start([{ content: [{ type: 'text', text: 'cut' }], stop_reason: 'max_tokens', usage: { input_tokens: 7, output_tokens: 3 } }]);
    const msg = await client(f).messages.create({ model: MODEL, max_tokens: 5, messages: USER });
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.usage).toMatchObject({ input_tokens: 7, output_tokens: 3 });
  });

  it('messages.stream() emits contentBlock per block and finalMessage matches the script', async () => {
    const f = await start([
      {
        content: [
          { type: 'thinking', thinking: 'I should list files.', signature: 'sig-1' },
          { type: 'text', text: 'Running ls — 🚀 now.' },
          { type: 'tool_use', id: 'toolu_A', name: 'bash', input: { command: 'ls -la /tmp', nested: { n: [1, 2, 3] } } },
        ],
        usage: { input_tokens: 11, output_tokens: 22 },
        delay_ms: 2,
      },
    ]);
    const stream = client(f).messages.stream({ model: MODEL, max_tokens: 64000, messages: USER, tools: [BASH_TOOL] });
    const blocks: unknown[] = [];
    const texts: string[] = [];
    stream.on('contentBlock', (b) => blocks.push(structuredClone(b)));
    stream.on('text', (delta) => texts.push(delta));
    const final = await stream.finalMessage();

    const expected = [
      { type: 'thinking', thinking: 'I should list files.', signature: 'sig-1' },
      { type: 'text', text: 'Running ls — 🚀 now.' },
      { type: 'tool_use', id: 'toolu_A', name: 'bash', input: { command: 'ls -la /tmp', nested: { n: [1, 2, 3] } } },
    ];
    expect(blocks).toEqual(expected);
    expect(final.content).toEqual(expected);
    expect(texts.length).toBeGreaterThanOrEqual(2);
    expect(final.stop_reason).toBe('tool_use');
    expect(final.usage).toMatchObject({ input_tokens: 11, output_tokens: 22 });
    expect(f.requests[0]!.body.stream).toBe(true);
  });

  it('retries a 429 with retry-after when maxRetries allows, and throws RateLimitError when not', async () => {
    const rateLimited: FakeTurn = {
      fault: 'http',
      status: 429,
      error_type: 'rate_limit_error',
      headers: { 'retry-after': '0' },
    };
    const ok: FakeTurn = { content: [{ type: 'text', text: 'finally' }] };

    const f = await start([rateLimited, ok]);
    const msg = await client(f, 2).messages.create({ model: MODEL, max_tokens: 100, messages: USER });
    expect(msg.content).toEqual([{ type: 'text', text: 'finally' }]);
    expect(f.requests).toHaveLength(2);
    expect(f.requests[1]!.headers['x-stainless-retry-count']).toBe('1');

    f.enqueue(rateLimited, ok);
    const err = await client(f, 0).messages.create({ model: MODEL, max_tokens: 100, messages: USER }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    expect(err.status).toBe(429);
    expect(err.type).toBe('rate_limit_error');
    expect(err.requestID).toMatch(/^req_fake_/);
    expect(f.remaining()).toBe(1);
  });

  it('529 overloaded maps to OverloadedError', async () => {
    const f = await start([{ fault: 'http', status: 529, error_type: 'overloaded_error' }]);
    const err = await client(f).messages.create({ model: MODEL, max_tokens: 10, messages: USER }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    expect(err.constructor.name).toBe('OverloadedError');
    expect(err.status).toBe(529);
  });

  it('a scripted 401 gives AuthenticationError', async () => {
    const f = await start([{ fault: 'http', status: 401, error_type: 'authentication_error' }]);
    const err = await client(f).messages.create({ model: MODEL, max_tokens: 10, messages: USER }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(err.type).toBe('authentication_error');
  });

  it('checks the api key when one is configured, without consuming a turn', async () => {
    const f = await start([{ content: [{ type: 'text', text: 'ok' }] }], 'right-key');
    const err = await client(f).messages.create({ model: MODEL, max_tokens: 10, messages: USER }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(f.remaining()).toBe(1);
    const good = new Anthropic({ apiKey: 'right-key', baseURL: f.url, maxRetries: 0 });
    await expect(good.messages.create({ model: MODEL, max_tokens: 10, messages: USER })).resolves.toBeTruthy();
    // x-api-key is accepted too.
    f.enqueue({ content: [{ type: 'text', text: 'ok' }] });
    expect((await rawPost(f, { model: MODEL, max_tokens: 5, messages: USER }, { 'x-api-key': 'right-key' })).status).toBe(200);
  });

  it('an in-band stream error rejects finalMessage with an APIError without status', async () => {
    const f = await start([
      {
        fault: 'stream_error',
        error_type: 'overloaded_error',
        after_blocks: 1,
        content: [
          { type: 'text', text: 'partial answer' },
          { type: 'tool_use', name: 'bash', input: { command: 'never sent' } },
        ],
      },
    ]);
    const stream = client(f, 2).messages.stream({ model: MODEL, max_tokens: 100, messages: USER });
    const blocks: unknown[] = [];
    stream.on('contentBlock', (b) => blocks.push(b));
    const err = await stream.finalMessage().catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.status).toBeUndefined();
    expect(err.type).toBe('overloaded_error');
    expect(JSON.stringify(err.error)).toContain('overloaded_error');
    expect(blocks).toEqual([{ type: 'text', text: 'partial answer' }]);
    // Not retried by the SDK, even with maxRetries: 2.
    expect(f.requests).toHaveLength(1);
  });

  it('a connection reset mid-stream rejects finalMessage', async () => {
    const f = await start([{ fault: 'reset', after_blocks: 1, content: [{ type: 'text', text: 'half' }, { type: 'text', text: 'lost' }] }]);
    const stream = client(f).messages.stream({ model: MODEL, max_tokens: 100, messages: USER });
    const blocks: unknown[] = [];
    stream.on('contentBlock', (b) => blocks.push(b));
    const err = await stream.finalMessage().catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.AnthropicError);
    expect(err.status).toBeUndefined();
    expect(blocks).toEqual([{ type: 'text', text: 'half' }]);
  });

  it('a reset on a non-streaming request is an APIConnectionError', async () => {
    const f = await start([{ fault: 'reset' }]);
    const err = await client(f).messages.create({ model: MODEL, max_tokens: 10, messages: USER }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIConnectionError);
  });

  it('a stall loses to the client timeout, and the server notices the disconnect', async () => {
    const f = await start([{ fault: 'stall', ms: 5_000 }, { content: [{ type: 'text', text: 'after stall' }] }]);
    const t0 = Date.now();
    const err = await client(f)
      .messages.create({ model: MODEL, max_tokens: 10, messages: USER }, { timeout: 200 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    expect(Date.now() - t0).toBeLessThan(2_000);
    const msg = await client(f).messages.create({ model: MODEL, max_tokens: 10, messages: USER });
    expect(msg.content).toEqual([{ type: 'text', text: 'after stall' }]);
  });

  it('close() does not wait for a stalled request', async () => {
    const f = await start([{ fault: 'stall', ms: 60_000 }]);
    const pending = client(f).messages.create({ model: MODEL, max_tokens: 10, messages: USER }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    await f.close();
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(await pending).toBeInstanceOf(Anthropic.APIConnectionError);
  });

  it('rejects a tool_use without a following tool_result (400) and keeps the turn', async () => {
    const f = await start([{ content: [{ type: 'text', text: 'unused' }] }]);
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'list files' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_X', name: 'bash', input: { command: 'ls' } }] },
      { role: 'user', content: 'what did you find?' },
    ];
    const err = await client(f).messages.create({ model: MODEL, max_tokens: 10, messages, tools: [BASH_TOOL] }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.type).toBe('invalid_request_error');
    expect(err.message).toContain('toolu_X');
    expect(err.message).toContain('tool_result');
    expect(f.remaining()).toBe(1);
    expect(f.requests).toHaveLength(1);
  });

  it('records headers and body of every request', async () => {
    const f = await start([{ content: [{ type: 'text', text: 'ok' }] }]);
    await client(f).messages.create({
      model: MODEL,
      max_tokens: 10,
      system: 'You are a test.',
      messages: USER,
      tools: [BASH_TOOL],
    });
    const [req] = f.requests;
    expect(req!.method).toBe('POST');
    expect(req!.path).toBe('/v1/messages');
    expect(req!.headers['authorization']).toBe('Bearer test-key');
    expect(req!.headers['anthropic-version']).toBe('2026-10-21');
    expect(req!.body.system).toBe('You are a test.');
    expect(req!.body.tools).toEqual([BASH_TOOL]);
    expect(req!.body.messages).toEqual(USER);
  });

  it('says clearly when the script is exhausted, and the SDK does not retry it', async () => {
    const f = await start([]);
    const err = await client(f, 2).messages.create({ model: MODEL, max_tokens: 10, messages: USER }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    expect(err.message).toContain('fake server: no scripted turn left');
    expect(f.requests).toHaveLength(1);
  });
});

describe('fake Anthropic server wire format and validation', () => {
  it('streams every SSE event with an event: line, a ping, and the usual order', async () => {
    const f = await start([{ content: [{ type: 'text', text: 'hi there' }, { type: 'tool_use', name: 'bash', input: {} }] }]);
    const res = await rawPost(f, { model: MODEL, max_tokens: 5, messages: USER, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = res.text.trimEnd().split('\n\n').map((chunk) => {
      const [eventLine, dataLine, ...rest] = chunk.split('\n');
      expect(rest).toEqual([]);
      expect(eventLine).toMatch(/^event: /);
      expect(dataLine).toMatch(/^data: /);
      const data = JSON.parse(dataLine!.slice(6));
      expect(data.type).toBe(eventLine!.slice(7));
      return data;
    });
    expect(events.map((e) => (e.type === 'content_block_delta' ? `delta:${e.delta.type}` : e.type))).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'delta:text_delta',
      'delta:text_delta',
      'content_block_stop',
      'content_block_start',
      'delta:input_json_delta',
      'delta:input_json_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[0].message.content).toEqual([]);
    expect(events[6].content_block).toEqual({ type: 'tool_use', id: 'toolu_fake_1', name: 'bash', input: {} });
    expect(events[10].delta).toMatchObject({ stop_reason: 'tool_use', stop_sequence: null });
  });

  it('flushes events as they are written (delay_ms)', async () => {
    const f = await start([{ content: [{ type: 'text', text: 'abcdef' }], delay_ms: 150 }]);
    const stream = client(f).messages.stream({ model: MODEL, max_tokens: 5, messages: USER });
    const t0 = Date.now();
    let firstText = 0;
    stream.on('text', () => (firstText ||= Date.now() - t0));
    await stream.finalMessage();
    const total = Date.now() - t0;
    expect(firstText).toBeGreaterThan(0);
    expect(total - firstText).toBeGreaterThanOrEqual(300); // deltas, stop, message_delta, message_stop still to come
  });

  it('answers 404 for other routes and 400 without anthropic-version', async () => {
    const f = await start([{ content: [{ type: 'text', text: 'kept' }] }]);
    const notFound = await fetch(`${f.url}/v1/models`, { headers: { 'x-api-key': 'k' } });
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const noVersion = await rawPost(f, { model: MODEL, max_tokens: 5, messages: USER }, { 'anthropic-version': '' });
    expect(noVersion.status).toBe(400);
    expect(noVersion.text).toContain('anthropic-version');
    const noKey = await rawPost(f, { model: MODEL, max_tokens: 5, messages: USER }, { 'x-api-key': '' });
    expect(noKey.status).toBe(401);
    expect(JSON.parse(noKey.text)).toMatchObject({ type: 'error', error: { type: 'authentication_error' }, request_id: expect.stringMatching(/^req_fake_/) });
    expect(noKey.headers.get('request-id')).toBe(JSON.parse(noKey.text).request_id);
    expect(f.requests.map((r) => r.path)).toEqual(['/v1/models', '/v1/messages', '/v1/messages']);
    expect(f.remaining()).toBe(1);
  });

  const toolUse = (id: string) => ({ type: 'tool_use', id, name: 'bash', input: { command: 'ls' } });
  const toolResult = (id: string) => ({ type: 'tool_result', tool_use_id: id, content: 'out' });
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['missing model', { max_tokens: 5, messages: USER }, 'model'],
    ['zero max_tokens', { model: MODEL, max_tokens: 0, messages: USER }, 'max_tokens'],
    ['fractional max_tokens', { model: MODEL, max_tokens: 1.5, messages: USER }, 'max_tokens'],
    ['empty messages', { model: MODEL, max_tokens: 5, messages: [] }, 'messages'],
    ['assistant first', { model: MODEL, max_tokens: 5, messages: [{ role: 'assistant', content: 'hi' }] }, 'first message'],
    ['two users in a row', { model: MODEL, max_tokens: 5, messages: [...USER, ...USER] }, 'alternate'],
    ['empty user content', { model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: [] }] }, 'non-empty'],
    ['empty text block', { model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] }, 'non-empty'],
    [
      'tool_result after text',
      {
        model: MODEL,
        max_tokens: 5,
        messages: [...USER, { role: 'assistant', content: [toolUse('t1')] }, { role: 'user', content: [{ type: 'text', text: 'x' }, toolResult('t1')] }],
      },
      'must come before',
    ],
    [
      'tool_result for an unknown id',
      {
        model: MODEL,
        max_tokens: 5,
        messages: [...USER, { role: 'assistant', content: [toolUse('t1')] }, { role: 'user', content: [toolResult('t1'), toolResult('t2')] }],
      },
      't2',
    ],
    [
      'one of two tool_uses unanswered',
      {
        model: MODEL,
        max_tokens: 5,
        messages: [...USER, { role: 'assistant', content: [toolUse('t1'), toolUse('t2')] }, { role: 'user', content: [toolResult('t2')] }],
      },
      't1',
    ],
    ['tool without input_schema', { model: MODEL, max_tokens: 5, messages: USER, tools: [{ name: 'bash' }] }, 'input_schema'],
    ['tools not an array', { model: MODEL, max_tokens: 5, messages: USER, tools: { name: 'bash' } }, 'tools'],
  ];
  it.each(cases)('400 for %s, turn kept', async (_name, body, needle) => {
    const f = await start([{ content: [{ type: 'text', text: 'kept' }] }]);
    const res = await rawPost(f, body);
    expect(res.status).toBe(400);
    const json = JSON.parse(res.text);
    expect(json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(json.error.message).toContain(needle);
    expect(f.remaining()).toBe(1);
  });

  it('accepts a well-formed tool round trip and a trailing assistant tool_use', async () => {
    const f = await start([{ content: [{ type: 'text', text: 'a' }] }, { content: [{ type: 'text', text: 'b' }] }]);
    const roundTrip = [
      ...USER,
      { role: 'assistant', content: [{ type: 'text', text: 'running' }, toolUse('t1'), toolUse('t2')] },
      { role: 'user', content: [toolResult('t2'), { ...toolResult('t1'), is_error: true }, { type: 'text', text: 'go on' }] },
    ];
    expect((await rawPost(f, { model: MODEL, max_tokens: 5, messages: roundTrip, tools: [BASH_TOOL] })).status).toBe(200);
    const prefill = [...USER, { role: 'assistant', content: [toolUse('t9')] }];
    expect((await rawPost(f, { model: MODEL, max_tokens: 5, messages: prefill })).status).toBe(200);
  });
});
