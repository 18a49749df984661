import Anthropic from '@anthropic-ai/sdk';

/** How one failed API call should be treated. */
export interface FailureVerdict {
  retryable: boolean;
  /** The API's error type, e.g. `rate_limit_error`, or `connection_error`. */
  kind: string;
  status?: number;
  /** One line saying what failed. */
  message: string;
  /** The server's `retry-after` hint, in ms. */
  retryAfterMs?: number;
}

const RETRYABLE_STATUS = (s: number) => s === 408 || s === 409 || s === 429 || s >= 500;

/** Classify by the SDK's typed errors and HTTP status, never by message text. */
export function classifyFailure(err: unknown): FailureVerdict {
  if (err instanceof Anthropic.APIConnectionError) {
    const kind = err instanceof Anthropic.APIConnectionTimeoutError ? 'timeout' : 'connection_error';
    return { retryable: true, kind, message: `API ${kind.replace('_', ' ')}: ${err.message}` };
  }
  if (err instanceof Anthropic.APIError) {
    const kind = err.type ?? (err.status ? `http_${err.status}` : 'stream_error');
    const detail = err.apiMessage ?? err.message;
    if (err.status === 400 && isPromptTooLong(err)) {
      return { retryable: false, kind: 'prompt_too_long', status: 400, message: `API error 400 prompt_too_long: ${detail}` };
    }
    if (err.status === undefined) {
      // An `error` event in the middle of a stream: the SDK does not retry these, we do.
      return { retryable: true, kind, message: `API error mid-stream: ${kind}: ${detail}` };
    }
    return {
      retryable: RETRYABLE_STATUS(err.status),
      kind,
      status: err.status,
      message: `API error ${err.status} ${kind}: ${detail}`,
      retryAfterMs: retryAfterMs(err.headers),
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof Anthropic.AnthropicError && isSocketFailure((err as Error).cause)) {
    // A reset mid-stream surfaces as a plain AnthropicError whose cause is the socket error.
    return { retryable: true, kind: 'connection_error', message: `API connection lost mid-stream: ${message}` };
  }
  return { retryable: false, kind: 'unknown', message: `API call failed: ${message}` };
}

/** `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (headers?.get('retry-after-ms') && Number.isFinite(ms)) return Math.max(0, ms);
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Exponential backoff with jitter: ~0.5 s, 1 s, 2 s ... capped at 30 s. */
export function backoffMs(attempt: number, random = Math.random): number {
  const base = Math.min(30_000, 500 * 2 ** attempt);
  return Math.round(base * (0.75 + random() * 0.5));
}

/** Never wait longer than this for one retry, whatever the server says. */
export const MAX_RETRY_DELAY_MS = 60_000;

/**
 * The API gives an overlong prompt no error type of its own (it is an
 * invalid_request_error), so this one case looks at the code, then at the
 * documented wording of the message.
 */
function isPromptTooLong(err: InstanceType<typeof Anthropic.APIError>): boolean {
  return err.errorCode === 'prompt_too_long' || /^prompt is too long/i.test(err.apiMessage ?? '');
}

const SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

function isSocketFailure(cause: unknown): boolean {
  for (let c = cause, depth = 0; c && depth < 4; c = (c as { cause?: unknown }).cause, depth++) {
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string' && SOCKET_CODES.has(code)) return true;
  }
  return false;
}
