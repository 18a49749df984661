import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { bashTool } from '../../src/loop/bash-tool.js';
import { toolResultText } from '../../src/loop/tool-result-text.js';
import {
  type CassetteTurn,
  appendTurn,
  describeMismatch,
  normaliseMessages,
  normaliseText,
  readCassette,
  recordRequest,
  requestKey,
} from '../../src/model/cassette.js';
import type { ModelRequest } from '../../src/model/model.js';
import type { ExecResult, Message } from '../../src/types.js';

const MODEL = 'claude-test';

function exec(command: string, stdout: string, vary: { durationMs: number; container: string }): ExecResult {
  return {
    command,
    exitCode: 0,
    stdout,
    stderr: '',
    timedOut: false,
    oomKilled: false,
    aborted: false,
    truncated: false,
    durationMs: vary.durationMs,
    containerId: vary.container,
    timeoutSeconds: 120,
  };
}

/** The request of turn 2 of an episode: two commands ran, their results are the last user message. */
function request(vary: { ids: [string, string]; durationMs: number; container: string; signature: string }, catOutput = 'one\ntwo\nthree\n'): ModelRequest {
  const messages: Message[] = [
    { role: 'user', content: [{ type: 'text', text: 'count the lines of a.txt' }] },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'look first', signature: vary.signature },
        { type: 'text', text: 'Looking.' },
        { type: 'tool_use', id: vary.ids[0], name: 'bash', input: { command: 'hostname' } },
        { type: 'tool_use', id: vary.ids[1], name: 'bash', input: { command: 'cat a.txt' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: vary.ids[0], content: toolResultText(exec('hostname', `${vary.container.slice(0, 12)}\n`, vary)) },
        { type: 'tool_result', tool_use_id: vary.ids[1], content: toolResultText(exec('cat a.txt', catOutput, vary)) },
      ],
    },
  ];
  return { system: 'sys', tools: [bashTool()], messages, maxTokens: 1000 };
}

const runA = { ids: ['toolu_01AAA', 'toolu_01BBB'] as [string, string], durationMs: 140, container: 'a'.repeat(64), signature: 'sigA' };
const runB = { ids: ['toolu_09XYZ', 'toolu_09QRS'] as [string, string], durationMs: 2371, container: '0123456789abcdef'.repeat(4), signature: 'sigB' };

describe('requestKey', () => {
  it('is the same for the same commands on the same workspace, whatever ids, durations, containers and signatures', () => {
    expect(requestKey(request(runA), MODEL)).toBe(requestKey(request(runB), MODEL));
    expect(requestKey(request(runA), MODEL)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('ignores the order of object keys and maxTokens', () => {
    const a = request(runA);
    const b = request(runA);
    b.messages[1]!.content[2] = { input: { command: 'hostname' }, name: 'bash', id: runA.ids[0], type: 'tool_use' };
    expect(requestKey({ ...a, maxTokens: 5 }, MODEL)).toBe(requestKey(b, MODEL));
  });

  it('changes when a tool result really changes', () => {
    expect(requestKey(request(runA), MODEL)).not.toBe(requestKey(request(runA, 'one\ntwo\nTHREE\n'), MODEL));
  });

  it('changes with the model, the system prompt, the tools and the history', () => {
    const base = requestKey(request(runA), MODEL);
    expect(requestKey(request(runA), 'other-model')).not.toBe(base);
    expect(requestKey({ ...request(runA), system: 'sys 2' }, MODEL)).not.toBe(base);
    expect(requestKey({ ...request(runA), tools: [bashTool(true)] }, MODEL)).not.toBe(base);
    expect(requestKey({ ...request(runA), messages: request(runA).messages.slice(0, 1) }, MODEL)).not.toBe(base);
  });
});

describe('normaliseText', () => {
  it('replaces durations', () => {
    expect(normaliseText('Exit code: 0 (0.14 s)')).toBe('Exit code: 0 (<duration>)');
    expect(normaliseText('Exit code: 1 (12 s)')).toBe('Exit code: 1 (<duration>)');
    expect(normaliseText('Timed out after 120 s: the command was killed.')).toBe('Timed out after 120 s: the command was killed.');
  });

  it('replaces container ids, short and full, as whole words only', () => {
    expect(normaliseText('host 3f2a9c1b0d4e\n')).toBe('host <container>\n');
    expect(normaliseText(`id=${'b'.repeat(64)}.`)).toBe('id=<container>.');
    expect(normaliseText('3f2a9c1b0d4')).toBe('3f2a9c1b0d4'); // 11
    expect(normaliseText('3f2a9c1b0d4e5')).toBe('3f2a9c1b0d4e5'); // 13
    expect(normaliseText('3F2A9C1B0D4E')).toBe('3F2A9C1B0D4E'); // upper case
    expect(normaliseText('x3f2a9c1b0d4e')).toBe('x3f2a9c1b0d4e');
  });

  it('replaces run ids and the names built from them', () => {
    expect(normaliseText('run 20261129T191444-b56bec done')).toBe('run <run> done');
    expect(normaliseText('volume sandloop-20261129T191444-b56bec')).toBe('volume <run>');
    expect(normaliseText('sandloop-results/20261129T191444-b56bec/changes.patch')).toBe('sandloop-results/<run>/changes.patch');
  });

  it('replaces sandloop temp dirs, keeping the path inside them', () => {
    expect(normaliseText('cd /tmp/sandloop-demo-Ab12Cd/src && ls')).toBe('cd <tmp>/src && ls');
    expect(normaliseText('/private/var/folders/xy/abc123/T/sandloop-chan-4242-q1W2e3 gone')).toBe('<tmp> gone');
    expect(normaliseText('/tmp/other-dir')).toBe('/tmp/other-dir');
  });
});

describe('normaliseMessages', () => {
  it('numbers tool ids by appearance, drops signatures, normalises tool results, leaves the input alone', () => {
    const req = request(runA);
    const before = structuredClone(req.messages);
    const out = normaliseMessages(req.messages);
    expect(req.messages).toEqual(before);
    expect(out[1]!.content).toEqual([
      { type: 'thinking', thinking: 'look first' },
      { type: 'text', text: 'Looking.' },
      { type: 'tool_use', id: 'tool_1', name: 'bash', input: { command: 'hostname' } },
      { type: 'tool_use', id: 'tool_2', name: 'bash', input: { command: 'cat a.txt' } },
    ]);
    expect(out[2]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'tool_1', content: 'Exit code: 0 (<duration>)\n--- stdout ---\n<container>' },
      { type: 'tool_result', tool_use_id: 'tool_2', content: 'Exit code: 0 (<duration>)\n--- stdout ---\none\ntwo\nthree' },
    ]);
  });
});

describe('cassette files', () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const setup = () => (dir = mkdtempSync(join(tmpdir(), 'cassette-test-')));

  it('appends lines (creating directories) and reads them back', () => {
    const path = join(setup(), 'deep', 'er', 'episode.jsonl');
    const turn: CassetteTurn = { turn: 1, key: 'k', model: MODEL, request: { last_user: [] }, content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { output_tokens: 3 } };
    appendTurn(path, turn);
    appendTurn(path, { ...turn, turn: 2 });
    expect(readFileSync(path, 'utf8').split('\n')).toHaveLength(3);
    expect(readCassette(path)).toEqual([turn, { ...turn, turn: 2 }]);
  });

  it('accepts hand-written lines (content only) and skips blank lines', () => {
    const path = join(setup(), 'hand.jsonl');
    writeFileSync(path, '{"content":[{"type":"text","text":"a"}]}\n\n{"content":[]}\n');
    expect(readCassette(path)).toHaveLength(2);
  });

  it('names the file and the line of bad JSON', () => {
    const path = join(setup(), 'bad.jsonl');
    writeFileSync(path, '{"content":[]}\n{"content": [\n');
    expect(() => readCassette(path)).toThrow(ConfigError);
    expect(() => readCassette(path)).toThrow(`cassette ${path}:2: invalid JSON`);
  });

  it('names the line without a content array', () => {
    const path = join(setup(), 'nocontent.jsonl');
    writeFileSync(path, '{"content":[]}\n\n{"turn":2,"content":"text"}\n');
    expect(() => readCassette(path)).toThrow(`cassette ${path}:3: expected an object with a "content" array`);
  });

  it('refuses a line whose turn number is out of place', () => {
    const path = join(setup(), 'gap.jsonl');
    writeFileSync(path, '{"turn":1,"content":[]}\n{"turn":3,"content":[]}\n');
    expect(() => readCassette(path)).toThrow(`cassette ${path}:2: says "turn": 3 but is turn 2`);
  });

  it('is a ConfigError when the file is missing', () => {
    expect(() => readCassette(join(setup(), 'missing.jsonl'))).toThrow(/cannot read the cassette .*missing\.jsonl/);
  });
});

describe('describeMismatch', () => {
  const recorded = (req: ModelRequest): CassetteTurn => ({ turn: 2, key: requestKey(req, MODEL), model: MODEL, request: recordRequest(req), content: [] });

  it('diffs the first tool result that changed and names it with its command', () => {
    const text = describeMismatch(recorded(request(runA)), request(runB, 'one\n2\nthree\n'));
    expect(text).toContain('tool result 2 of 2 (for: cat a.txt) differs:');
    expect(text).toContain('--- recorded\n+++ now');
    expect(text).toMatch(/^-two$/m);
    expect(text).toMatch(/^\+2$/m);
    expect(text).toMatch(/^ one$/m);
    // Volatile parts do not show up as differences.
    expect(text).not.toMatch(/^[-+]Exit code/m);
  });

  it('reports a different number of tool results', () => {
    const now = request(runA);
    now.messages[2]!.content.pop();
    expect(describeMismatch(recorded(request(runA)), now)).toContain('the recording answered 2 tool result(s); now there are 1');
  });

  it('diffs the user text when there are no tool results', () => {
    const req = { ...request(runA), messages: request(runA).messages.slice(0, 1) };
    const now = { ...req, messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'count the words of a.txt' }] }] };
    const text = describeMismatch(recorded(req), now);
    expect(text).toContain('the last user message differs');
    expect(text).toMatch(/^-.*count the lines of a\.txt/m);
    expect(text).toMatch(/^\+.*count the words of a\.txt/m);
  });

  it('says what else differs when the last user message is the same', () => {
    const rec = recorded(request(runA));
    expect(describeMismatch(rec, { ...request(runB), system: 'other' })).toContain('the system prompt differs');
    expect(describeMismatch(rec, { ...request(runB), tools: [bashTool(true)] })).toContain('the tool definitions differ');
    expect(describeMismatch(rec, request(runB), 'other-model')).toContain('the model differs: recorded claude-test, now other-model');
    const longer = request(runB);
    longer.messages.unshift({ role: 'user', content: [{ type: 'text', text: 'earlier' }] }, { role: 'assistant', content: [{ type: 'text', text: 'ok' }] });
    expect(describeMismatch(rec, longer)).toContain('the number of messages differs: recorded 3, now 5');
  });

  it('points at the history when everything it can compare matches', () => {
    const rec = recorded(request(runA));
    const now = request(runB);
    now.messages[0] = { role: 'user', content: [{ type: 'text', text: 'another prompt' }] };
    expect(describeMismatch(rec, now)).toContain('an earlier message of the conversation differs');
  });
});
