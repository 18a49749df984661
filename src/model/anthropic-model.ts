import Anthropic from '@anthropic-ai/sdk';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortedError, ModelError } from '../errors.js';
import type { ContentBlock, ToolUseBlock, Usage } from '../types.js';
import type { Model, ModelCallOptions, ModelRequest, ModelResponse } from './model.js';
import type { RateGate } from './rate-gate.js';
import { MAX_RETRY_DELAY_MS, backoffMs, classifyFailure } from './retry-policy.js';

export interface AnthropicModelOptions {
  /** Model id, e.g. `claude-sonnet-4-5`. */
  model: string;
  apiKey?: string;
  /** API base URL; the SDK's default when unset. */
  baseURL?: string;
  /** Retries of a failed turn (429, 5xx, 529, mid-stream errors, resets). Default 6. */
  maxRetries?: number;
  /** Per-request timeout in ms. Default 10 minutes. */
  timeoutMs?: number;
  /** Inject a client (tests, proxies). Built from the fields above when absent. */
  client?: Anthropic;
  /** Shared back-off across episodes (a batch): a 429 here pauses every model call that shares it. */
  gate?: RateGate;
}

export const DEFAULT_MAX_RETRIES = 6;

/**
 * The real model, through the SDK's streaming API. The SDK's own retries are
 * off: this adapter retries every transient failure itself (including errors
 * in the middle of a stream, which the SDK does not retry) so that each retry
 * is visible to the caller.
 */
export class AnthropicModel implements Model {
  readonly name: string;
  private readonly client: Anthropic;
  private readonly maxRetries: number;
  private readonly gate?: RateGate;

  constructor(options: AnthropicModelOptions) {
    this.name = options.model;
    this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.gate = options.gate;
    this.client =
      options.client ??
      new Anthropic({ apiKey: options.apiKey, baseURL: options.baseURL, maxRetries: 0, timeout: options.timeoutMs ?? 600_000 });
  }

  async complete(request: ModelRequest, { signal, onRetry, onToolUse }: ModelCallOptions): Promise<ModelResponse> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.gate?.wait(signal);
        const stream = this.client.messages.stream(
          {
            model: this.name,
            system: request.system,
            messages: request.messages as Anthropic.MessageParam[],
            tools: request.tools as Anthropic.Tool[],
            max_tokens: request.maxTokens,
          },
          { signal, maxRetries: 0 },
        );
        if (onToolUse) {
          // content_block_stop: this tool call is complete and can start now.
          stream.on('contentBlock', (block) => {
            if (block.type === 'tool_use') onToolUse(block as ToolUseBlock);
          });
        }
        const message = await stream.finalMessage();
        return { content: message.content as ContentBlock[], stopReason: message.stop_reason, usage: usageOf(message.usage) };
      } catch (err) {
        if (signal.aborted || err instanceof Anthropic.APIUserAbortError) throw new AbortedError();
        const verdict = classifyFailure(err);
        if (!verdict.retryable || attempt >= this.maxRetries) {
          const tries = attempt > 0 ? ` (after ${attempt} ${attempt === 1 ? 'retry' : 'retries'})` : '';
          throw new ModelError(`${verdict.message}${tries}`, verdict.kind, verdict.status, !verdict.retryable);
        }
        const delayMs = Math.min(MAX_RETRY_DELAY_MS, verdict.retryAfterMs ?? backoffMs(attempt));
        if (verdict.status === 429) this.gate?.pause(delayMs);
        onRetry?.({ attempt: attempt + 1, delayMs, reason: verdict.message });
        try {
          await sleep(delayMs, undefined, { signal });
        } catch {
          throw new AbortedError();
        }
      }
    }
  }
}

function usageOf(u: Anthropic.Usage | undefined): Partial<Usage> {
  return {
    input_tokens: u?.input_tokens ?? 0,
    output_tokens: u?.output_tokens ?? 0,
    cache_creation_input_tokens: u?.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: u?.cache_read_input_tokens ?? 0,
  };
}
