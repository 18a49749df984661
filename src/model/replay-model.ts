import { AbortedError, ModelError } from '../errors.js';
import type { ContentBlock } from '../types.js';
import { type CassetteTurn, describeMismatch, readCassette, requestKey } from './cassette.js';
import type { Model, ModelCallOptions, ModelRequest, ModelResponse } from './model.js';

export interface ReplayOptions {
  /**
   * `strict`: a request whose key differs from the recorded one fails the run
   * (a code change altered what the agent saw). `lenient`: serve the recorded
   * turn anyway and warn, to see how far a changed episode still gets.
   */
  mode: 'strict' | 'lenient';
  /** A name for the episode in messages; default: the cassette path. */
  episode?: string;
  /** Lenient mode: called once per turn whose request differs from the recording. */
  onWarning?: (message: string) => void;
}

/**
 * Plays a cassette back: turn i is line i, whatever the model would have said,
 * with no network and no API key. The tool calls still run for real, and each
 * request is checked against the recorded key, so CI turns red when current
 * code shows the agent something else. A hand-written line without a key is
 * served unchecked, like a scripted turn.
 */
export class ReplayModel implements Model {
  readonly name: string;
  private readonly turns: CassetteTurn[];
  private readonly episode: string;
  private next = 0;
  private ids = 0;

  constructor(
    readonly cassettePath: string,
    private readonly options: ReplayOptions,
  ) {
    this.turns = readCassette(cassettePath);
    this.name = `replay:${this.turns.find((t) => t.model)?.model ?? cassettePath}`;
    this.episode = options.episode ? `episode ${options.episode} (${cassettePath})` : `cassette ${cassettePath}`;
  }

  get remaining(): number {
    return this.turns.length - this.next;
  }

  async complete(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    if (options.signal.aborted) throw new AbortedError();
    const number = this.next + 1;
    const turn = this.turns[this.next];
    if (!turn) {
      // Nothing to serve, in either mode.
      const count = `${this.turns.length} turn${this.turns.length === 1 ? '' : 's'}`;
      throw new ModelError(`replay mismatch in ${this.episode}: the cassette has ${count}; turn ${number} was requested`, 'replay_mismatch', undefined, true);
    }
    this.next++;
    if (turn.key !== undefined && requestKey(request, turn.model ?? '') !== turn.key) {
      const message = `replay mismatch in ${this.episode}, turn ${number}: the request differs from the recording.\n${describeMismatch(turn, request)}`;
      if (this.options.mode === 'strict') throw new ModelError(message, 'replay_mismatch', undefined, true);
      this.options.onWarning?.(message);
    }
    const content = turn.content.map((block): ContentBlock =>
      block.type === 'tool_use' && !block.id ? { ...block, id: `toolu_replay_${++this.ids}` } : block,
    );
    // Report tool uses as a streaming adapter would, so the same code paths run.
    for (const block of content) if (block.type === 'tool_use') options.onToolUse?.(block);
    const hasToolUse = content.some((b) => b.type === 'tool_use');
    return { content, stopReason: turn.stop_reason ?? (hasToolUse ? 'tool_use' : 'end_turn'), usage: turn.usage ?? {} };
  }
}
