/**
 * A fake Anthropic Messages API for tests: a real HTTP server on 127.0.0.1 that
 * plays scripted turns (replies or faults), one per `POST /v1/messages`, in the
 * wire format the real API and `@anthropic-ai/sdk` use.
 *
 *   const fake = await startFakeAnthropic({ turns: [{ content: [{ type: 'text', text: 'hi' }] }] });
 *   const client = new Anthropic({ apiKey: 'k', baseURL: fake.url, maxRetries: 0 });
 *   ...
 *   await fake.close();
 *
 * Order of checks per request: record it, path (404), auth (401), anthropic-version
 * (400), JSON + protocol validation (400). None of these consume a turn; only a
 * request that passes them all takes the next turn from the queue.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Usage } from '@anthropic-ai/sdk/resources/messages';
import { blockFrames, errorFrame, headFrames, tailFrames, type WireBlock, type WireMessage } from './sse.js';
import { validateMessagesBody } from './validate.js';

export type FakeBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id?: string; name: string; input: unknown } // id defaults to 'toolu_fake_<n>'
  | { type: 'thinking'; thinking: string; signature?: string };

export type FakeTurn =
  /** A normal reply. stop_reason defaults to 'tool_use' if any tool_use block, else 'end_turn'. delay_ms: pause between SSE events (or before a JSON reply); latency_ms: the whole stream's duration, spread evenly between its events (wins over delay_ms). */
  | { content: FakeBlock[]; stop_reason?: string; usage?: Partial<Usage>; delay_ms?: number; latency_ms?: number }
  /** An HTTP error before any body, e.g. 429 rate_limit_error with retry-after, 529 overloaded_error, 401 authentication_error. */
  | { fault: 'http'; status: number; error_type: string; message?: string; headers?: Record<string, string> }
  /** Start a stream, send `after_blocks` whole blocks of `content`, then an in-band `event: error`. A non-streaming request gets the matching HTTP status instead. */
  | { fault: 'stream_error'; error_type: string; message?: string; after_blocks?: number; content?: FakeBlock[]; delay_ms?: number }
  /** Like stream_error but the socket is destroyed instead; a non-streaming request is dropped before any response. */
  | { fault: 'reset'; after_blocks?: number; content?: FakeBlock[]; delay_ms?: number }
  /** Hold the request unanswered for `ms` (the client's timeout/abort should win), then answer 500 with x-should-retry: false. */
  | { fault: 'stall'; ms: number };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: any;
  /** Date.now() when the whole request had arrived. */
  receivedAt: number;
}

export interface FakeAnthropic {
  /** 'http://127.0.0.1:PORT', usable as the SDK's baseURL / ANTHROPIC_BASE_URL. */
  url: string;
  /** Every request received, in order, including rejected ones. */
  requests: RecordedRequest[];
  enqueue(...turns: FakeTurn[]): void;
  /** Turns not yet played. */
  remaining(): number;
  /** Closes the server and every open socket (stalled and streaming requests included). */
  close(): Promise<void>;
}

/** HTTP status the real API uses for each error type (for stream_error on a non-streaming request). */
const STATUS_FOR_TYPE: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

const DEFAULT_MESSAGE: Record<string, string> = {
  authentication_error: 'invalid x-api-key',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit',
  api_error: 'Internal server error',
  overloaded_error: 'Overloaded',
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const tokensFor = (v: unknown) => Math.max(1, Math.round((JSON.stringify(v) ?? '').length / 4));

export async function startFakeAnthropic(opts: { turns?: FakeTurn[]; apiKey?: string } = {}): Promise<FakeAnthropic> {
  const queue: FakeTurn[] = [...(opts.turns ?? [])];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const counters = { msg: 0, tool: 0, sig: 0, req: 0 };
  const nextRequestId = () => `req_fake_${++counters.req}`;
  let closed = false;

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      // A bug in the fake itself: make it loud rather than hanging the client.
      if (!res.headersSent) sendError(res, 500, 'api_error', `fake server crashed: ${String(err?.stack ?? err)}`, { 'x-should-retry': 'false' });
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function sendJSON(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, requestId = nextRequestId()) {
    if (res.destroyed || res.headersSent) return;
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, ...headers });
    res.end(JSON.stringify(body));
  }

  /** The real API's error shape: {type:'error', error:{type, message}, request_id}. */
  function sendError(res: http.ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}) {
    const requestId = nextRequestId();
    sendJSON(res, status, { type: 'error', error: { type, message }, request_id: requestId }, headers, requestId);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = undefined;
    let jsonOk = true;
    if (raw !== '') {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
        jsonOk = false;
      }
    }
    const path = req.url ?? '/';
    requests.push({ method: req.method ?? '', path, headers: { ...req.headers }, body, receivedAt: Date.now() });

    if (req.method !== 'POST' || new URL(path, 'http://x').pathname !== '/v1/messages') {
      return sendError(res, 404, 'not_found_error', `fake server: no route for ${req.method} ${path} (only POST /v1/messages)`);
    }
    const authProblem = checkAuth(req.headers);
    if (authProblem) return sendError(res, 401, 'authentication_error', authProblem);
    if (!req.headers['anthropic-version']) return sendError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    const problem = jsonOk ? validateMessagesBody(body) : 'request body is not valid JSON';
    if (problem) return sendError(res, 400, 'invalid_request_error', problem);

    const turn = queue.shift();
    if (!turn) {
      return sendError(res, 500, 'api_error', 'fake server: no scripted turn left', { 'x-should-retry': 'false' });
    }
    await play(turn, body, res);
  }

  function checkAuth(headers: http.IncomingHttpHeaders): string | null {
    const xKey = typeof headers['x-api-key'] === 'string' ? headers['x-api-key'] : '';
    const bearer = /^Bearer (.+)$/.exec(headers['authorization'] ?? '')?.[1] ?? '';
    if (!xKey && !bearer) return 'x-api-key header is required (or authorization: Bearer <key>)';
    if (opts.apiKey !== undefined && xKey !== opts.apiKey && bearer !== opts.apiKey) return 'invalid x-api-key';
    return null;
  }

  async function play(turn: FakeTurn, body: any, res: http.ServerResponse) {
    const streaming = body.stream === true;
    if (!('fault' in turn)) {
      const message = buildMessage(body, turn.content, turn.stop_reason, turn.usage);
      if (!streaming) {
        if (turn.delay_ms) await sleep(turn.delay_ms);
        return sendJSON(res, 200, message);
      }
      return stream(res, message, message.content.length, turn.delay_ms, null, turn.latency_ms);
    }
    switch (turn.fault) {
      case 'http': {
        const message = turn.message ?? DEFAULT_MESSAGE[turn.error_type] ?? turn.error_type;
        return sendError(res, turn.status, turn.error_type, message, turn.headers);
      }
      case 'stream_error': {
        const message = turn.message ?? DEFAULT_MESSAGE[turn.error_type] ?? turn.error_type;
        if (!streaming) return sendError(res, STATUS_FOR_TYPE[turn.error_type] ?? 500, turn.error_type, message);
        const partial = buildMessage(body, turn.content ?? []);
        return stream(res, partial, turn.after_blocks ?? 0, turn.delay_ms, { type: turn.error_type, message });
      }
      case 'reset': {
        if (!streaming) return void res.socket?.destroy();
        const partial = buildMessage(body, turn.content ?? []);
        return stream(res, partial, turn.after_blocks ?? 0, turn.delay_ms, 'reset');
      }
      case 'stall': {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, turn.ms);
          res.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        return sendError(res, 500, 'api_error', `fake server: stalled ${turn.ms} ms and the client was still waiting`, {
          'x-should-retry': 'false',
        });
      }
    }
  }

  function buildMessage(body: any, blocks: FakeBlock[], stopReason?: string, usage?: Partial<Usage>): WireMessage {
    const content: WireBlock[] = blocks.map((b) => {
      if (b.type === 'tool_use') return { type: 'tool_use', id: b.id ?? `toolu_fake_${++counters.tool}`, name: b.name, input: b.input };
      if (b.type === 'thinking') return { type: 'thinking', thinking: b.thinking, signature: b.signature ?? `sig_fake_${++counters.sig}` };
      return { type: 'text', text: b.text };
    });
    return {
      id: `msg_fake_${++counters.msg}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn'),
      stop_sequence: null,
      stop_details: null,
      usage: {
        input_tokens: tokensFor(body.messages),
        output_tokens: tokensFor(content),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        ...(usage as Record<string, unknown>),
      } as WireMessage['usage'],
    };
  }

  /**
   * Stream `message` as SSE. With `ending` null the stream completes normally;
   * otherwise only the first `blocks` blocks are sent and then either an
   * in-band error event or a destroyed socket.
   */
  async function stream(
    res: http.ServerResponse,
    message: WireMessage,
    blocks: number,
    delayMs: number | undefined,
    ending: null | 'reset' | { type: string; message: string },
    latencyMs?: number,
  ) {
    const requestId = nextRequestId();
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': requestId });
    res.flushHeaders();
    const frames = [...headFrames(message), ...message.content.slice(0, blocks).flatMap((b, i) => blockFrames(b, i))];
    if (ending === null) frames.push(...tailFrames(message));
    else if (ending !== 'reset') frames.push(errorFrame(ending.type, ending.message, requestId));
    if (latencyMs !== undefined) delayMs = latencyMs / Math.max(1, frames.length - 1);

    for (const [i, frame] of frames.entries()) {
      if (i > 0 && delayMs) await sleep(delayMs);
      if (res.destroyed || closed) return;
      await writeFrame(res, frame);
    }
    if (ending === 'reset') {
      if (delayMs) await sleep(delayMs);
      res.socket?.destroy();
    } else {
      res.end();
    }
  }

  /** Write one frame and wait until it is handed to the socket (or the client is gone). */
  function writeFrame(res: http.ServerResponse, frame: string): Promise<void> {
    return new Promise<void>((resolve) => {
      const onClose = () => resolve();
      res.once('close', onClose);
      res.write(frame, () => {
        res.off('close', onClose);
        resolve();
      });
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...turns) => void queue.push(...turns),
    remaining: () => queue.length,
    close: async () => {
      if (closed) return;
      closed = true;
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await done;
    },
  };
}
