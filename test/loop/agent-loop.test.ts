import { describe, expect, it } from 'vitest';
import { ModelError } from '../../src/errors.js';
import { MAX_TOKENS_RECOVERIES, RESUME_PROMPT, type LoopOptions, runLoop } from '../../src/loop/agent-loop.js';
import type { Model, ModelRequest, ModelResponse } from '../../src/model/model.js';
import { ScriptedModel, type ScriptedTurn } from '../../src/model/scripted-model.js';
import type { ContentBlock, Message, RunEvent } from '../../src/types.js';
import { FakeSandbox } from '../helpers/fake-sandbox.js';

const bash = (command: string, id?: string): ContentBlock => ({ type: 'tool_use', id: id ?? '', name: 'bash', input: { command } });
const text = (t: string): ContentBlock => ({ type: 'text', text: t });

/** A model that records what it was sent (a deep copy) and answers from a list. */
class RecordingModel implements Model {
  readonly name = 'recording';
  readonly requests: ModelRequest[] = [];
  constructor(private readonly replies: (ModelResponse | Error)[]) {}
  async complete(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(structuredClone(request));
    const reply = this.replies.shift();
    if (!reply) throw new Error('no reply left');
    if (reply instanceof Error) throw reply;
    return reply;
  }
}

function setup(model: Model, sandbox = new FakeSandbox(), overrides: Partial<LoopOptions> = {}) {
  const events: RunEvent[] = [];
  const messages: Message[] = [{ role: 'user', content: [text('do it')] }];
  const options: LoopOptions = {
    model,
    sandbox,
    system: 'sys',
    maxTurns: 50,
    maxTokens: 1000,
    timeoutSeconds: 120,
    parallel: 4,
    signal: new AbortController().signal,
    onEvent: (e) => events.push(e),
    ...overrides,
  };
  return { events, messages, options, sandbox, run: () => runLoop(messages, options) };
}

const scripted = (...turns: ScriptedTurn[]) => new ScriptedModel(turns);

describe('runLoop', () => {
  it('stops with completed when a reply has no tool_use, and returns its text', async () => {
    const t = setup(scripted({ content: [text('all done')] }));
    const out = await t.run();
    expect(out).toMatchObject({ status: 'completed', result: 'all done', turns: 1, toolCalls: 0 });
    expect(t.sandbox.commands).toEqual([]);
  });

  it('continues on tool_use content even when stop_reason says end_turn', async () => {
    const t = setup(scripted({ content: [bash('ls')], stop_reason: 'end_turn' }, { content: [text('ok')] }));
    const out = await t.run();
    expect(out.status).toBe('completed');
    expect(out.turns).toBe(2);
    expect(t.sandbox.commands.map((c) => c.command)).toEqual(['ls']);
  });

  it('stops when stop_reason says tool_use but there is no tool_use block', async () => {
    const t = setup(scripted({ content: [text('hmm')], stop_reason: 'tool_use' }));
    expect((await t.run()).status).toBe('completed');
  });

  it('answers every tool_use in one user message, same ids, request order, tool_results first', async () => {
    // The first call is the slowest: completion order differs from request order.
    const delays: Record<string, number> = { a: 60, b: 5, c: 30 };
    const sandbox = new FakeSandbox((cmd) => ({ delayMs: delays[cmd] }));
    const model = new RecordingModel([
      { content: [text('three at once'), bash('a', 'id_a'), bash('b', 'id_b'), bash('c', 'id_c')], stopReason: 'tool_use', usage: {} },
      { content: [text('done')], stopReason: 'end_turn', usage: {} },
    ]);
    const t = setup(model, sandbox);
    await t.run();
    const reply = model.requests[1]!.messages.at(-1)!;
    expect(reply.role).toBe('user');
    expect(reply.content.map((b) => b.type)).toEqual(['tool_result', 'tool_result', 'tool_result']);
    expect(reply.content.map((b) => (b as { tool_use_id: string }).tool_use_id)).toEqual(['id_a', 'id_b', 'id_c']);
    expect((reply.content[0] as { content: string }).content).toContain('ran: a');
    expect(sandbox.maxRunning).toBe(3);
  });

  it('respects parallel=1', async () => {
    const sandbox = new FakeSandbox(() => ({ delayMs: 5 }));
    const t = setup(scripted({ content: [bash('a'), bash('b')] }, { content: [text('x')] }), sandbox, { parallel: 1 });
    await t.run();
    expect(sandbox.maxRunning).toBe(1);
  });

  it('turns malformed input and unknown tools into is_error results and goes on', async () => {
    const model = new RecordingModel([
      {
        content: [
          { type: 'tool_use', id: 'u1', name: 'bash', input: {} },
          { type: 'tool_use', id: 'u2', name: 'bash', input: { command: 42 } },
          { type: 'tool_use', id: 'u3', name: 'python', input: { code: 'print(1)' } },
          { type: 'tool_use', id: 'u4', name: 'bash', input: 'ls' },
          { type: 'tool_use', id: 'u5', name: 'bash', input: { command: 'ls', timeout: 'soon' } },
          { type: 'tool_use', id: 'u6', name: 'bash', input: { command: 'echo fine' } },
        ],
        stopReason: 'tool_use',
        usage: {},
      },
      { content: [text('recovered')], stopReason: 'end_turn', usage: {} },
    ]);
    const t = setup(model);
    const out = await t.run();
    expect(out.status).toBe('completed');
    const results = model.requests[1]!.messages.at(-1)!.content as { tool_use_id: string; content: string; is_error?: boolean }[];
    expect(results.map((r) => r.tool_use_id)).toEqual(['u1', 'u2', 'u3', 'u4', 'u5', 'u6']);
    expect(results[0]).toMatchObject({ is_error: true, content: 'Invalid input for bash: "command" is required.' });
    expect(results[1]).toMatchObject({ is_error: true, content: 'Invalid input for bash: "command" must be a string, got number.' });
    expect(results[2]).toMatchObject({ is_error: true, content: 'Unknown tool "python". The only tool is "bash".' });
    expect(results[3]!.content).toMatch(/expected an object/);
    expect(results[4]!.content).toMatch(/"timeout" must be a positive number of seconds, got "soon"/);
    expect(results[5]!.is_error).toBeUndefined();
    expect(t.sandbox.commands.map((c) => c.command)).toEqual(['echo fine']);
    const calls = t.events.filter((e) => e.type === 'tool_call');
    expect(calls).toHaveLength(6);
  });

  it('caps the model-requested timeout at --timeout', async () => {
    const t = setup(
      scripted(
        { content: [{ type: 'tool_use', id: 'a', name: 'bash', input: { command: 'x', timeout: 5 } }] },
        { content: [{ type: 'tool_use', id: 'b', name: 'bash', input: { command: 'y', timeout: 9999 } }] },
        { content: [text('ok')] },
      ),
      undefined,
      { timeoutSeconds: 30 },
    );
    await t.run();
    expect(t.sandbox.commands.map((c) => c.timeoutSeconds)).toEqual([5, 30]);
  });

  it('enforces max_turns exactly: never more model calls than the cap', async () => {
    const model = new RecordingModel(Array.from({ length: 20 }, () => ({ content: [bash('again')], stopReason: 'tool_use', usage: { output_tokens: 1 } })));
    const t = setup(model, undefined, { maxTurns: 3 });
    const out = await t.run();
    expect(out).toMatchObject({ status: 'max_turns', turns: 3, toolCalls: 3 });
    expect(model.requests).toHaveLength(3);
    expect(out.usage.output_tokens).toBe(3);
    // The history stays valid: the last tool_use got its result.
    expect(t.messages.at(-1)!.content[0]!.type).toBe('tool_result');
  });

  it('recovers from max_tokens by asking the model to resume, and joins the text', async () => {
    const model = new RecordingModel([
      { content: [text('Hello, ')], stopReason: 'max_tokens', usage: {} },
      { content: [text('World!')], stopReason: 'end_turn', usage: {} },
    ]);
    const t = setup(model);
    const out = await t.run();
    expect(out).toMatchObject({ status: 'completed', result: 'Hello, World!', turns: 2 });
    expect(model.requests[1]!.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: RESUME_PROMPT }] });
  });

  it(`stops with max_tokens after ${MAX_TOKENS_RECOVERIES} recoveries`, async () => {
    const model = new RecordingModel(Array.from({ length: 10 }, () => ({ content: [text('cut')], stopReason: 'max_tokens', usage: {} })));
    const out = await setup(model).run();
    expect(out.status).toBe('max_tokens');
    expect(model.requests).toHaveLength(MAX_TOKENS_RECOVERIES + 1);
  });

  it('reports an API failure as status error with the message and type', async () => {
    const model = new RecordingModel([new ModelError('API error 529 overloaded_error: Overloaded (after 6 retries)', 'overloaded_error', 529)]);
    const out = await setup(model).run();
    expect(out).toMatchObject({ status: 'error', error: 'API error 529 overloaded_error: Overloaded (after 6 retries)', errorType: 'overloaded_error' });
  });

  it('stops with aborted when the signal fires during a tool call', async () => {
    const controller = new AbortController();
    const sandbox = new FakeSandbox(() => {
      controller.abort();
      return { aborted: true, exitCode: 130 };
    });
    const model = new RecordingModel([{ content: [bash('sleep 600')], stopReason: 'tool_use', usage: {} }]);
    const out = await setup(model, sandbox, { signal: controller.signal }).run();
    expect(out).toMatchObject({ status: 'aborted', turns: 1, toolCalls: 1 });
    expect(model.requests).toHaveLength(1);
  });

  it('a sandbox failure becomes an is_error result, not a crash', async () => {
    const sandbox = new FakeSandbox(() => {
      throw new Error('docker create did not answer within 30 s');
    });
    const model = new RecordingModel([
      { content: [bash('ls', 'x')], stopReason: 'tool_use', usage: {} },
      { content: [text('gave up')], stopReason: 'end_turn', usage: {} },
    ]);
    const out = await setup(model, sandbox).run();
    expect(out.status).toBe('completed');
    const result = model.requests[1]!.messages.at(-1)!.content[0] as { content: string; is_error: boolean };
    expect(result).toMatchObject({ is_error: true, content: 'The sandbox failed to run the command: docker create did not answer within 30 s' });
  });

  it('sends the bash tool with a truthful description and the system prompt', async () => {
    const model = new RecordingModel([{ content: [text('x')], stopReason: 'end_turn', usage: {} }]);
    await setup(model).run();
    const [tool] = model.requests[0]!.tools;
    expect(tool!.name).toBe('bash');
    expect(tool!.description).toMatch(/fresh, throwaway container/);
    expect(tool!.description).toMatch(/Only files under \/workspace persist/);
    expect(tool!.input_schema).toMatchObject({ required: ['command'] });
    expect(model.requests[0]!.system).toBe('sys');
  });

  it('starts a tool call as soon as its block is complete, before the reply ends, and keeps the transcript in order', async () => {
    const log: string[] = [];
    const sandbox = new FakeSandbox((cmd) => {
      log.push(`exec ${cmd}`);
      return {};
    });
    const model: Model = {
      name: 'streaming',
      async complete(_req, { onToolUse }) {
        if (log.length === 0) {
          onToolUse?.({ type: 'tool_use', id: 'early', name: 'bash', input: { command: 'first' } });
          await new Promise((r) => setTimeout(r, 30));
          log.push('reply complete');
          return { content: [bash('first', 'early'), bash('second', 'late')], stopReason: 'tool_use', usage: {} };
        }
        return { content: [text('done')], stopReason: 'end_turn', usage: {} };
      },
    };
    const t = setup(model, sandbox);
    await t.run();
    expect(log).toEqual(['exec first', 'reply complete', 'exec second']);
    const types = t.events.map((e) => e.type);
    expect(types.indexOf('assistant')).toBeLessThan(types.indexOf('tool_start'));
  });

  it('cancels a streamed call the final reply does not hold (a retried attempt)', async () => {
    const sandbox = new FakeSandbox(() => ({ delayMs: 20 }));
    const model: Model = {
      name: 'retrying',
      async complete(_req, { onToolUse }) {
        if (sandbox.commands.length === 0) {
          onToolUse?.({ type: 'tool_use', id: 'attempt1', name: 'bash', input: { command: 'from the failed attempt' } });
          return { content: [bash('from the retry', 'attempt2')], stopReason: 'tool_use', usage: {} };
        }
        return { content: [text('done')], stopReason: 'end_turn', usage: {} };
      },
    };
    const t = setup(model, sandbox);
    const out = await t.run();
    expect(out.toolCalls).toBe(1);
    const calls = t.events.filter((e) => e.type === 'tool_call');
    expect(calls.map((c) => [c.tool_use_id, c.discarded ?? false])).toEqual([['attempt1', true], ['attempt2', false]]);
  });

  it('when one call of a turn fails to start, the others still finish', async () => {
    const sandbox = new FakeSandbox((cmd) => {
      if (cmd === 'b') throw new Error('docker create: no space left on device');
      return { delayMs: 10 };
    });
    const model = new RecordingModel([
      { content: [bash('a', 'ia'), bash('b', 'ib'), bash('c', 'ic')], stopReason: 'tool_use', usage: {} },
      { content: [text('ok')], stopReason: 'end_turn', usage: {} },
    ]);
    await setup(model, sandbox).run();
    const results = model.requests[1]!.messages.at(-1)!.content as { tool_use_id: string; content: string; is_error?: boolean }[];
    expect(results.map((r) => [r.tool_use_id, r.is_error ?? false])).toEqual([['ia', false], ['ib', true], ['ic', false]]);
    expect(results[1]!.content).toBe('The sandbox failed to run the command: docker create: no space left on device');
  });

  it('on "prompt is too long", shrinks the oldest tool results to stubs and retries the turn once', async () => {
    const tooLong = () => new ModelError('API error 400 prompt_too_long: prompt is too long: 210000 tokens > 200000 maximum', 'prompt_too_long', 400, true);
    const model = new RecordingModel([
      { content: [bash('one', 't1')], stopReason: 'tool_use', usage: {} },
      { content: [bash('two', 't2')], stopReason: 'tool_use', usage: {} },
      { content: [bash('three', 't3')], stopReason: 'tool_use', usage: {} },
      tooLong(),
      { content: [text('fits now')], stopReason: 'end_turn', usage: {} },
    ]);
    const t = setup(model);
    const out = await t.run();
    expect(out).toMatchObject({ status: 'completed', result: 'fits now', turns: 4 });
    const retried = model.requests[4]!.messages;
    const results = retried.filter((m) => m.role === 'user').flatMap((m) => m.content.filter((b) => b.type === 'tool_result')) as { content: string }[];
    expect(results.map((r) => r.content.startsWith('[output removed'))).toEqual([true, false, false]);
  });

  it('stops with a clear error when the prompt is still too long after shrinking', async () => {
    const tooLong = () => new ModelError('API error 400 prompt_too_long: prompt is too long', 'prompt_too_long', 400, true);
    const model = new RecordingModel([
      { content: [bash('one')], stopReason: 'tool_use', usage: {} },
      { content: [bash('two')], stopReason: 'tool_use', usage: {} },
      { content: [bash('three')], stopReason: 'tool_use', usage: {} },
      tooLong(),
      tooLong(),
    ]);
    const out = await setup(model).run();
    expect(out.status).toBe('error');
    expect(out.errorType).toBe('prompt_too_long');
    expect(out.error).toMatch(/does not fit the context window even with old tool results shrunk/);
    expect(model.requests).toHaveLength(5);
  });
});
