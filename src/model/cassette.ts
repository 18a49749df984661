/**
 * Cassettes: a recorded episode, one model turn per line, for record/replay
 * smoke tests. The model's side is fixed by the cassette; the tool calls run
 * for real, and the request that comes back is compared with the recorded
 * one by a key that leaves out what legitimately varies between runs
 * (tool ids, durations, container ids, run ids, temp paths).
 *
 * A line has the shape of a scripted turn (`content`, `stop_reason`) plus
 * what the recording knew, so a hand-written script and a recording look alike:
 *
 *     {"turn":1,"key":"<sha256>","model":"claude-...","request":{...,"last_user":[...]},"content":[...],"stop_reason":"tool_use","usage":{...}}
 */
import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { ConfigError, errorMessage } from '../errors.js';
import type { ContentBlock, Message, ToolResultBlock, Usage } from '../types.js';
import type { ModelRequest } from './model.js';

/** What a recording keeps of the request a turn answered: enough to explain a mismatch. */
export interface RecordedRequest {
  /** How many messages the request held. */
  messages?: number;
  /** sha256 of the system prompt (the prompt itself is config, not worth repeating on every line). */
  system_sha256?: string;
  /** sha256 of the canonical JSON of the tool definitions. */
  tools_sha256?: string;
  /** The last user message, normalised (see `normaliseMessages`): what the model was answering. */
  last_user: ContentBlock[];
}

/** One line of a cassette. Only `content` is required, so a hand-written line is a scripted turn. */
export interface CassetteTurn {
  /** 1-based; when present it must match the line's position. */
  turn?: number;
  /** `requestKey` of the request this turn answered. Absent in hand-written lines: then nothing is checked. */
  key?: string;
  /** The model that produced the turn. */
  model?: string;
  request?: RecordedRequest;
  content: ContentBlock[];
  /** Default: `tool_use` when the turn has a tool_use block, else `end_turn`. */
  stop_reason?: string | null;
  usage?: Partial<Usage>;
}

/** Read a cassette. Blank lines are skipped; errors name the file and the physical line. */
export function readCassette(path: string): CassetteTurn[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read the cassette ${path}: ${errorMessage(err)}`);
  }
  const turns: CassetteTurn[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const where = `cassette ${path}:${i + 1}`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch (err) {
      throw new ConfigError(`${where}: invalid JSON: ${errorMessage(err)}`);
    }
    if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as CassetteTurn).content)) {
      throw new ConfigError(`${where}: expected an object with a "content" array`);
    }
    const turn = parsed as CassetteTurn;
    // A deleted or reordered line would otherwise shift every later turn silently.
    if (turn.turn !== undefined && turn.turn !== turns.length + 1) {
      throw new ConfigError(`${where}: says "turn": ${JSON.stringify(turn.turn)} but is turn ${turns.length + 1}`);
    }
    turns.push(turn);
  });
  return turns;
}

/** Append one line, synchronously so a crash mid-run still leaves every finished turn on disk. */
export function appendTurn(path: string, turn: CassetteTurn): void {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, `${JSON.stringify(turn)}\n`);
}

// Order matters: temp paths and run names may contain what later patterns would match.
const NORMALISERS: [RegExp, string][] = [
  // mkdtemp dirs such as /tmp/sandloop-demo-Ab12Cd (also macOS's per-user temp dir).
  [/(?:\/private)?(?:\/var\/folders\/[^\s/]+\/[^\s/]+\/T|\/tmp)\/sandloop-[\w.-]+/g, '<tmp>'],
  // Run ids (20261129T191444-b56bec) and names built from them (sandloop-<run id>).
  [/\b(?:sandloop-)?\d{8}T\d{6}-[0-9a-f]{6}\b/g, '<run>'],
  // Container ids, full or short; a container's hostname is its short id.
  [/\b(?:[0-9a-f]{64}|[0-9a-f]{12})\b/g, '<container>'],
  // `Exit code: 0 (0.14 s)`.
  [/\(\d+(?:\.\d+)? s\)/g, '(<duration>)'],
];

/** Replace what varies between runs of the same command on the same workspace with placeholders. */
export function normaliseText(s: string): string {
  return NORMALISERS.reduce((text, [pattern, replacement]) => text.replace(pattern, replacement), s);
}

/**
 * A copy of the conversation with volatile fields replaced: tool ids become
 * their position (`tool_1`, ... in order of appearance), thinking signatures
 * are dropped, tool result text goes through `normaliseText`.
 */
export function normaliseMessages(messages: Message[]): Message[] {
  const ids = new Map<string, string>();
  const idFor = (id: string) => {
    let mapped = ids.get(id);
    if (!mapped) ids.set(id, (mapped = `tool_${ids.size + 1}`));
    return mapped;
  };
  return messages.map((message) => ({
    role: message.role,
    content: message.content.map((block): ContentBlock => {
      switch (block.type) {
        case 'tool_use':
          return { ...block, id: idFor(block.id) };
        case 'tool_result':
          return { ...block, tool_use_id: idFor(block.tool_use_id), content: normaliseText(block.content) };
        case 'thinking':
          return { type: 'thinking', thinking: block.thinking } as ContentBlock;
        default:
          return { ...block };
      }
    }),
  }));
}

/** JSON with object keys sorted at every level, so equal data always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The identity of a request: the same command on the same workspace gives the
 * same key across runs and machines. `maxTokens` is left out: it does not
 * change what the agent saw.
 */
export function requestKey(req: ModelRequest, model: string): string {
  return sha256(canonicalJson({ model, system: req.system, tools: req.tools, messages: normaliseMessages(req.messages) }));
}

/** What a recording keeps of a request (see RecordedRequest). */
export function recordRequest(req: ModelRequest): RecordedRequest {
  return {
    messages: req.messages.length,
    system_sha256: sha256(req.system),
    tools_sha256: sha256(canonicalJson(req.tools)),
    last_user: lastUser(normaliseMessages(req.messages)),
  };
}

function lastUser(normalised: Message[]): ContentBlock[] {
  return normalised.findLast((m) => m.role === 'user')?.content ?? [];
}

const MAX_DIFF_LINES = 60;

/**
 * Explain where a request departs from the recorded one, first difference
 * first: the tool results of the last user message (as a unified diff of the
 * first that changed), then its other blocks, then system prompt, tools,
 * model and history. `model` is the current model's name, when it may differ.
 */
export function describeMismatch(recorded: CassetteTurn, request: ModelRequest, model?: string): string {
  const rec = recorded.request;
  if (!rec) return 'the cassette line records no request to compare with (a hand-written line?)';
  const normalised = normaliseMessages(request.messages);
  const now = lastUser(normalised);
  const before = rec.last_user;

  const recResults = before.filter((b): b is ToolResultBlock => b.type === 'tool_result');
  const nowResults = now.filter((b): b is ToolResultBlock => b.type === 'tool_result');
  const parts: string[] = [];
  if (recResults.length !== nowResults.length) {
    parts.push(`the recording answered ${recResults.length} tool result(s); now there are ${nowResults.length}`);
  }
  for (let i = 0; i < Math.min(recResults.length, nowResults.length); i++) {
    const a = resultText(recResults[i]!);
    const b = resultText(nowResults[i]!);
    if (a === b) continue;
    const command = commandFor(normalised, nowResults[i]!.tool_use_id);
    const label = `tool result ${i + 1} of ${nowResults.length}${command ? ` (for: ${command})` : ''}`;
    parts.push(`${label} differs:\n${unifiedDiff(a, b)}`);
    break;
  }
  if (parts.length > 0) return parts.join('\n');

  if (canonicalJson(before) !== canonicalJson(now)) {
    const a = JSON.stringify(before, null, 2);
    const b = JSON.stringify(now, null, 2);
    return `the last user message differs:\n${unifiedDiff(a, b)}`;
  }

  const others: string[] = [];
  if (model !== undefined && recorded.model !== undefined && model !== recorded.model) {
    others.push(`the model differs: recorded ${recorded.model}, now ${model}`);
  }
  if (rec.system_sha256 !== undefined && rec.system_sha256 !== sha256(request.system)) others.push('the system prompt differs');
  if (rec.tools_sha256 !== undefined && rec.tools_sha256 !== sha256(canonicalJson(request.tools))) {
    others.push(`the tool definitions differ (now: ${request.tools.map((t) => t.name).join(', ') || 'none'})`);
  }
  if (rec.messages !== undefined && rec.messages !== request.messages.length) {
    others.push(`the number of messages differs: recorded ${rec.messages}, now ${request.messages.length}`);
  }
  if (others.length > 0) return `the last user message matches, but ${others.join('; ')}`;
  return 'the last user message, system prompt, tools and model match; an earlier message of the conversation differs (a tool result that already differed on an earlier turn?)';
}

function resultText(block: ToolResultBlock): string {
  return block.is_error ? `${block.content}\n(is_error)` : block.content;
}

/** The command of the tool_use a result answers, on one short line. */
function commandFor(messages: Message[], id: string): string | undefined {
  for (const m of messages) {
    for (const b of m.content) {
      if (b.type !== 'tool_use' || b.id !== id) continue;
      const command = (b.input as { command?: unknown } | null)?.command;
      const text = typeof command === 'string' ? command : `${b.name} ${JSON.stringify(b.input)}`;
      const line = text.replace(/\s*\n\s*/g, ' ↵ ').trim();
      return line.length > 80 ? `${line.slice(0, 77)}...` : line;
    }
  }
  return undefined;
}

function unifiedDiff(a: string, b: string): string {
  const nl = (s: string) => (s.endsWith('\n') ? s : `${s}\n`);
  // Drop jsdiff's `=====` banner: the labels say enough.
  const lines = createTwoFilesPatch('recorded', 'now', nl(a), nl(b)).split('\n').filter((l, i) => !(i === 0 && /^=+$/.test(l)));
  if (lines.at(-1) === '') lines.pop();
  if (lines.length <= MAX_DIFF_LINES) return lines.join('\n');
  return [...lines.slice(0, MAX_DIFF_LINES), `[... ${lines.length - MAX_DIFF_LINES} more diff lines ...]`].join('\n');
}
