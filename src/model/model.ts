import type { ContentBlock, Message, ToolSpec, ToolUseBlock, Usage } from '../types.js';

/** One request to the model: everything it needs to produce the next turn. */
export interface ModelRequest {
  system: string;
  messages: Message[];
  tools: ToolSpec[];
  maxTokens: number;
}

/** One assistant turn. */
export interface ModelResponse {
  content: ContentBlock[];
  /** The API's stop reason. The loop decides from the content, not from this. */
  stopReason: string | null;
  usage: Partial<Usage>;
}

/** Something the model adapter noticed on the way, for the transcript and `--verbose`. */
export interface RetryNotice {
  attempt: number;
  /** Milliseconds until the next attempt. */
  delayMs: number;
  reason: string;
}

export interface ModelCallOptions {
  signal: AbortSignal;
  /** Called when a request is retried after a transient failure. */
  onRetry?: (notice: RetryNotice) => void;
  /**
   * Called as soon as a tool_use block is complete, while the rest of the
   * reply may still be streaming. A block of a failed attempt that is retried
   * may be reported and then be missing from the final response.
   */
  onToolUse?: (block: ToolUseBlock) => void;
}

/**
 * The loop's whole view of a model. An adapter throws ModelError when the API
 * fails for good and AbortedError when the signal fires.
 */
export interface Model {
  /** The model's name as reported in results, e.g. `claude-sonnet-4-5` or `scripted:demo.json`. */
  readonly name: string;
  complete(request: ModelRequest, options: ModelCallOptions): Promise<ModelResponse>;
}
