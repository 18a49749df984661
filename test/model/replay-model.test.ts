import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cassetteShowCommand } from '../../src/cli/cassette-command.js';
import { ConfigError, ModelError } from '../../src/errors.js';
import { type LoopOptions, runLoop } from '../../src/loop/agent-loop.js';
import { normaliseMessages, readCassette } from '../../src/model/cassette.js';
import type { Model } from '../../src/model/model.js';
import { RecordingModel } from '../../src/model/recording-model.js';
import { ReplayModel } from '../../src/model/replay-model.js';
import { ScriptedModel, type ScriptedTurn } from '../../src/model/scripted-model.js';
import type { ContentBlock, ExecResult, Message, ToolUseBlock } from '../../src/types.js';
import { FakeSandbox } from '../helpers/fake-sandbox.js';

const bash = (command: string): ContentBlock => ({ type: 'tool_use', id: '', name: 'bash', input: { command } });
const text = (t: string): ContentBlock => ({ type: 'text', text: t });

const SCRIPT: ScriptedTurn[] = [
  { content: [text('Looking at the files.'), bash('ls'), bash('cat a.txt')] },
  { content: [text('Counting.'), bash('wc -l a.txt')] },
  { content: [text('a.txt has 3 lines.')] },
];

const OUTPUTS: Record<string, string> = { ls: 'a.txt\n', 'cat a.txt': 'one\ntwo\nthree\n', 'wc -l a.txt': '3 a.txt\n' };

/** The workspace's behaviour; each run gets its own durations and container ids, as real runs do. */
function sandbox(outputs = OUTPUTS, run = 0): FakeSandbox {
  let calls = 0;
  return new FakeSandbox((command): Partial<ExecResult> => {
    calls++;
    const container = `${run}${calls}`.padStart(12, 'c');
    return { stdout: outputs[command] ?? `unknown: ${command}\n`, durationMs: 10 + run * 1000 + calls * 7, containerId: container };
  });
}

async function episode(model: Model, sb: FakeSandbox) {
  const messages: Message[] = [{ role: 'user', content: [text('How many lines does a.txt have?')] }];
  const options: LoopOptions = {
    model,
    sandbox: sb,
    system: 'sys',
    maxTurns: 10,
    maxTokens: 1000,
    timeoutSeconds: 120,
    parallel: 2,
    signal: new AbortController().signal,
    onEvent: () => {},
  };
  const outcome = await runLoop(messages, options);
  return { outcome, messages, commands: sb.commands.map((c) => c.command) };
}

describe('record and replay', () => {
  let dir: string;
  let cassette: string;
  let recorded: Awaited<ReturnType<typeof episode>>;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'replay-test-'));
    cassette = join(dir, 'cassettes', 'count-lines.jsonl');
    recorded = await episode(new RecordingModel(new ScriptedModel(SCRIPT), cassette), sandbox(OUTPUTS, 0));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('records one line per turn, in the scripted turn shape', () => {
    expect(recorded.outcome.status).toBe('completed');
    const turns = readCassette(cassette);
    expect(turns.map((t) => t.turn)).toEqual([1, 2, 3]);
    expect(turns.map((t) => t.stop_reason)).toEqual(['tool_use', 'tool_use', 'end_turn']);
    expect(turns[0]!.model).toBe('scripted:inline');
    expect(turns[0]!.key).toMatch(/^[0-9a-f]{64}$/);
    expect(turns[0]!.request!.last_user).toEqual([text('How many lines does a.txt have?')]);
    expect(turns[1]!.request!.last_user.map((b) => b.type === 'tool_result' && b.tool_use_id)).toEqual(['tool_1', 'tool_2']);
    expect(turns[1]!.content).toEqual(recorded.messages[3]!.content);
  });

  it('starts the cassette afresh when recording again', async () => {
    await episode(new RecordingModel(new ScriptedModel(SCRIPT), cassette), sandbox(OUTPUTS, 0));
    expect(readCassette(cassette)).toHaveLength(3);
  });

  it('replays the same episode with the tool calls really run, and completes', async () => {
    const model = new ReplayModel(cassette, { mode: 'strict' });
    expect(model.name).toBe('replay:scripted:inline');
    const replayed = await episode(model, sandbox(OUTPUTS, 5));
    expect(replayed.outcome).toMatchObject({ status: 'completed', turns: 3, toolCalls: 3, result: 'a.txt has 3 lines.' });
    expect(replayed.commands).toEqual(recorded.commands);
    // Same conversation, up to what legitimately varies (durations, container ids).
    expect(normaliseMessages(replayed.messages)).toEqual(normaliseMessages(recorded.messages));
    expect(replayed.messages.filter((m) => m.role === 'assistant')).toEqual(recorded.messages.filter((m) => m.role === 'assistant'));
  });

  it('strict: a changed tool result fails the run with the episode, the turn and a diff', async () => {
    const changed = { ...OUTPUTS, 'cat a.txt': 'one\nTWO\nthree\n' };
    const model = new ReplayModel(cassette, { mode: 'strict', episode: 'count-lines' });
    const replayed = await episode(model, sandbox(changed, 5));
    expect(replayed.outcome.status).toBe('replay_mismatch');
    expect(replayed.outcome.errorType).toBe('replay_mismatch');
    const error = replayed.outcome.error!;
    expect(error).toContain('replay mismatch');
    expect(error).toContain('count-lines');
    expect(error).toContain('turn 2');
    expect(error).toContain('tool result 2 of 2 (for: cat a.txt)');
    expect(error).toMatch(/^-two$/m);
    expect(error).toMatch(/^\+TWO$/m);
    // It stopped before running the commands of the recorded turn 2.
    expect(replayed.commands).toEqual(['ls', 'cat a.txt']);
  });

  it('lenient: serves the recording anyway and warns once per divergent turn', async () => {
    const changed = { ...OUTPUTS, 'cat a.txt': 'one\nTWO\nthree\n' };
    const warnings: string[] = [];
    const model = new ReplayModel(cassette, { mode: 'lenient', onWarning: (w) => warnings.push(w) });
    const replayed = await episode(model, sandbox(changed, 5));
    expect(replayed.outcome.status).toBe('completed');
    expect(replayed.commands).toEqual(recorded.commands);
    // Turn 2 sees the changed result; turn 3 carries it in its history.
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain(`cassette ${cassette}, turn 2`);
    expect(warnings[0]).toMatch(/^\+TWO$/m);
    expect(warnings[1]).toContain('turn 3');
    expect(warnings[1]).toContain('an earlier message of the conversation differs');
  });

  it('a run that asks for more turns than recorded is a miss, in both modes', async () => {
    const lines = readFileSync(cassette, 'utf8').split('\n');
    writeFileSync(cassette, `${lines.slice(0, 2).join('\n')}\n`);
    for (const mode of ['strict', 'lenient'] as const) {
      const replayed = await episode(new ReplayModel(cassette, { mode }), sandbox(OUTPUTS, 5));
      expect(replayed.outcome.status).toBe('replay_mismatch');
      expect(replayed.outcome.errorType).toBe('replay_mismatch');
      expect(replayed.outcome.error).toContain('the cassette has 2 turns; turn 3 was requested');
    }
  });

  it('reports each tool_use through onToolUse before returning', async () => {
    const model = new ReplayModel(cassette, { mode: 'strict' });
    const seen: ToolUseBlock[] = [];
    const request = { system: 'sys', messages: [{ role: 'user' as const, content: [text('How many lines does a.txt have?')] }], tools: [], maxTokens: 1000 };
    // The tools differ from the recording: lenient would warn, strict refuses.
    await expect(model.complete(request, { signal: new AbortController().signal, onToolUse: (b) => seen.push(b) })).rejects.toThrow(ModelError);
    const lenient = new ReplayModel(cassette, { mode: 'lenient' });
    const response = await lenient.complete(request, { signal: new AbortController().signal, onToolUse: (b) => seen.push(b) });
    expect(seen.map((b) => (b.input as { command: string }).command)).toEqual(['ls', 'cat a.txt']);
    expect(response.content.filter((b) => b.type === 'tool_use')).toEqual(seen);
  });

  it('serves hand-written lines (no key) unchecked, giving tool_use blocks ids', async () => {
    const hand = join(dir, 'hand.jsonl');
    writeFileSync(hand, `${JSON.stringify({ content: [bash('ls')] })}\n${JSON.stringify({ content: [text('done')] })}\n`);
    const replayed = await episode(new ReplayModel(hand, { mode: 'strict' }), sandbox());
    expect(replayed.outcome.status).toBe('completed');
    expect((replayed.messages[1]!.content[0] as ToolUseBlock).id).toBe('toolu_replay_1');
  });

  it('a bad cassette is a ConfigError when the model is made', () => {
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, 'not json\n');
    expect(() => new ReplayModel(bad, { mode: 'strict' })).toThrow(ConfigError);
  });

  describe('cassette show', () => {
    async function show(file: string): Promise<{ code: number; out: string }> {
      let out = '';
      const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        out += String(chunk);
        return true;
      });
      try {
        return { code: await cassetteShowCommand({ file }), out };
      } finally {
        spy.mockRestore();
      }
    }

    it('prints the episode as a conversation, each command with its result', async () => {
      const { code, out } = await show(cassette);
      expect(code).toBe(0);
      expect(out).toContain(`# Cassette ${cassette}`);
      expect(out).toContain('3 turns · model scripted:inline');
      expect(out).toContain('## Prompt\n\nHow many lines does a.txt have?');
      expect(out).toContain('## Turn 1\n\nLooking at the files.');
      expect(out).toContain('$ cat a.txt\nExit code: 0 (<duration>)\n--- stdout ---\none\ntwo\nthree\n```');
      expect(out).toContain('## Turn 2\n\nCounting.');
      expect(out).toContain('$ wc -l a.txt\nExit code: 0 (<duration>)\n--- stdout ---\n3 a.txt');
      expect(out).toContain('## Turn 3\n\na.txt has 3 lines.');
      expect(out.indexOf('## Turn 1')).toBeLessThan(out.indexOf('$ ls'));
      expect(out.indexOf('$ ls')).toBeLessThan(out.indexOf('## Turn 2'));
      expect(out).not.toContain('\x1b');
    });

    it('cuts long results with a marker', async () => {
      const long = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join('\n');
      const file = join(dir, 'long.jsonl');
      await episode(new RecordingModel(new ScriptedModel([{ content: [bash('seq')] }, { content: [text('ok')] }]), file), sandbox({ seq: `${long}\n` }));
      const { out } = await show(file);
      expect(out).toContain('line 1\n');
      expect(out).toContain('[... 62 lines cut ...]');
      expect(out).toContain('line 100\n```');
      expect(out).not.toContain('line 50\n');
    });

    it('throws a ConfigError for a bad file', async () => {
      await expect(show(join(dir, 'missing.jsonl'))).rejects.toThrow(ConfigError);
    });
  });
});
