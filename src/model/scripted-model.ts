import { readFileSync } from 'node:fs';
import { ConfigError, ModelError, errorMessage } from '../errors.js';
import type { ContentBlock } from '../types.js';
import { readCassette } from './cassette.js';
import type { Model, ModelRequest, ModelResponse } from './model.js';

/** One pre-written assistant turn, in the Messages API's response shape. */
export interface ScriptedTurn {
  content: ContentBlock[];
  /** Default: `tool_use` when the turn has a tool_use block, else `end_turn`. */
  stop_reason?: string;
}

/**
 * Plays pre-written assistant turns in order, whatever the requests say. For
 * demos and tests: the model's side is fixed while the tool calls really run.
 * A script file is JSON: `{"turns": [{"content": [...]}, ...]}` (or just the
 * array), or a recorded cassette (`.jsonl`), whose lines have the same shape.
 */
export class ScriptedModel implements Model {
  readonly name: string;
  private next = 0;
  private ids = 0;

  constructor(
    private readonly turns: ScriptedTurn[],
    label = 'inline',
  ) {
    this.name = `scripted:${label}`;
  }

  static fromFile(path: string): ScriptedModel {
    // A cassette plays as a script: the same turn shape, one per line.
    if (path.endsWith('.jsonl')) return new ScriptedModel(readCassette(path).map((t) => ({ content: t.content, stop_reason: t.stop_reason ?? undefined })), path);
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new ConfigError(`cannot read the scripted model ${path}: ${errorMessage(err)}`);
    }
    const turns = Array.isArray(parsed) ? parsed : (parsed as { turns?: unknown })?.turns;
    if (!Array.isArray(turns)) throw new ConfigError(`scripted model ${path}: expected {"turns": [...]} or an array of turns`);
    turns.forEach((turn, i) => {
      if (!Array.isArray((turn as ScriptedTurn)?.content)) {
        throw new ConfigError(`scripted model ${path}: turn ${i + 1} has no "content" array`);
      }
    });
    return new ScriptedModel(turns as ScriptedTurn[], path);
  }

  get remaining(): number {
    return this.turns.length - this.next;
  }

  async complete(_request: ModelRequest): Promise<ModelResponse> {
    const turn = this.turns[this.next];
    if (!turn) throw new ModelError(`${this.name}: the script has no turn ${this.next + 1} (it has ${this.turns.length})`, 'script_exhausted');
    this.next++;
    const content = turn.content.map((block) =>
      block.type === 'tool_use' && !block.id ? { ...block, id: `toolu_scripted_${++this.ids}` } : block,
    );
    const hasToolUse = content.some((b) => b.type === 'tool_use');
    return { content, stopReason: turn.stop_reason ?? (hasToolUse ? 'tool_use' : 'end_turn'), usage: {} };
  }
}
