import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { appendTurn, recordRequest, requestKey } from './cassette.js';
import type { Model, ModelCallOptions, ModelRequest, ModelResponse } from './model.js';

/**
 * Wraps a real model and writes each turn it produces to a cassette, for
 * ReplayModel to play back in CI. The request is keyed before the call: the
 * loop appends to the same message array once the reply is in. A call that
 * fails writes nothing, so the cassette holds exactly the turns the loop saw.
 */
export class RecordingModel implements Model {
  readonly name: string;
  private turns = 0;

  constructor(
    private readonly inner: Model,
    readonly cassettePath: string,
  ) {
    this.name = inner.name;
    // A cassette is one episode: a stale tail from an earlier recording would replay as extra turns.
    mkdirSync(dirname(cassettePath), { recursive: true });
    writeFileSync(cassettePath, '');
  }

  async complete(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse> {
    const key = requestKey(request, this.inner.name);
    const recorded = recordRequest(request);
    const response = await this.inner.complete(request, options);
    appendTurn(this.cassettePath, {
      turn: ++this.turns,
      key,
      model: this.inner.name,
      request: recorded,
      content: response.content,
      stop_reason: response.stopReason,
      usage: response.usage,
    });
    return response;
  }
}
