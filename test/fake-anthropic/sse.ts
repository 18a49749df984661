/**
 * Server-sent-event framing for the fake Anthropic server: turns a reply
 * (blocks + stop reason + usage) into the exact event sequence the real
 * Messages API streams.
 */

/** A reply block as it goes on the wire (ids and signatures filled in). */
export type WireBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'thinking'; thinking: string; signature: string };

export interface WireUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  [key: string]: unknown;
}

export interface WireMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: WireBlock[];
  stop_reason: string | null;
  stop_sequence: string | null;
  stop_details: null;
  usage: WireUsage;
}

/**
 * One SSE event. The SDK drops any event without an `event:` line, so every
 * frame carries both `event:` and `data:`.
 */
export function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Split a string into `parts` pieces by code point (never splits a surrogate pair). */
export function splitString(s: string, parts = 2): string[] {
  const chars = Array.from(s);
  if (chars.length < parts) return chars.length === 0 ? [] : [s];
  const size = Math.ceil(chars.length / parts);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

/** message_start + ping: the opening of every stream. */
export function headFrames(message: WireMessage): string[] {
  const start = {
    ...message,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { ...message.usage, output_tokens: 1 },
  };
  return [sseFrame('message_start', { type: 'message_start', message: start }), sseFrame('ping', { type: 'ping' })];
}

/** content_block_start, its deltas, and content_block_stop for one block. */
export function blockFrames(block: WireBlock, index: number): string[] {
  const frames: string[] = [];
  const delta = (d: object) => frames.push(sseFrame('content_block_delta', { type: 'content_block_delta', index, delta: d }));

  switch (block.type) {
    case 'text':
      frames.push(sseFrame('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }));
      for (const text of splitString(block.text)) delta({ type: 'text_delta', text });
      break;
    case 'tool_use': {
      const { id, name } = block;
      frames.push(
        sseFrame('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id, name, input: {} },
        }),
      );
      const json = JSON.stringify(block.input ?? {});
      // Always at least two chunks, like the real API (which often opens with an empty one).
      const chunks = json.length >= 2 ? splitString(json, json.length >= 12 ? 3 : 2) : ['', json];
      for (const partial_json of chunks) delta({ type: 'input_json_delta', partial_json });
      break;
    }
    case 'thinking':
      frames.push(
        sseFrame('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        }),
      );
      for (const thinking of splitString(block.thinking)) delta({ type: 'thinking_delta', thinking });
      delta({ type: 'signature_delta', signature: block.signature });
      break;
  }
  frames.push(sseFrame('content_block_stop', { type: 'content_block_stop', index }));
  return frames;
}

/** message_delta (cumulative usage) + message_stop: the close of a successful stream. */
export function tailFrames(message: WireMessage): string[] {
  return [
    sseFrame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: message.stop_reason, stop_sequence: null, stop_details: null },
      usage: message.usage,
    }),
    sseFrame('message_stop', { type: 'message_stop' }),
  ];
}

/** The in-band error event the API sends when a stream fails after it started. */
export function errorFrame(errorType: string, message: string, requestId: string): string {
  return sseFrame('error', { type: 'error', error: { type: errorType, message }, request_id: requestId });
}
