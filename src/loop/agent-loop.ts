import { AbortedError, ModelError, errorMessage } from '../errors.js';
import type { Model } from '../model/model.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { addUsage, emptyUsage } from '../types.js';
import type { ContentBlock, Message, RunEvent, RunStatus, ToolCallEvent, ToolResultBlock, ToolUseBlock, Usage } from '../types.js';
import { BASH_TOOL_NAME, bashTool, parseBashInput } from './bash-tool.js';
import { createLimiter } from './limiter.js';
import { toolResultText } from './tool-result-text.js';

/** Claude Code's wording: resume without a recap. */
export const RESUME_PROMPT =
  'Output token limit hit. Resume directly, with no apology and no recap of what you were doing. Pick up mid-thought if that is where the cut happened.';
export const MAX_TOKENS_RECOVERIES = 3;

export interface LoopOptions {
  model: Model;
  sandbox: Sandbox;
  system: string;
  /** Most model calls this episode may make. */
  maxTurns: number;
  /** `max_tokens` sent with each request. */
  maxTokens: number;
  /** Default and cap for each bash call's timeout, in seconds. */
  timeoutSeconds: number;
  /** Most bash calls of one turn that run at once. */
  parallel: number;
  /** Tell the model /workspace is read-only. */
  readOnlyWorkspace?: boolean;
  signal: AbortSignal;
  onEvent: (event: RunEvent) => void;
}

export interface LoopOutcome {
  status: RunStatus;
  result: string;
  turns: number;
  toolCalls: number;
  usage: Usage;
  error?: string;
  /** For `error`: the API's error type, e.g. `authentication_error`. */
  errorType?: string;
}

/**
 * The agent loop: call the model, run the tools it asks for, feed the results
 * back, stop when it asks for none. `messages` must end with the user's prompt;
 * the loop appends to it in place, so a REPL can carry it to the next prompt.
 * Every way out is a status decided here; this function does not throw.
 */
export async function runLoop(messages: Message[], options: LoopOptions): Promise<LoopOutcome> {
  const { model, signal, onEvent } = options;
  const tools = [bashTool(options.readOnlyWorkspace)];
  const usage = emptyUsage();
  let turns = 0;
  let toolCalls = 0;
  let recoveries = 0;
  let shrunk = false;
  let text = '';
  const end = (status: RunStatus, error?: unknown): LoopOutcome => ({
    status,
    result: text,
    turns,
    toolCalls,
    usage,
    ...(error !== undefined ? { error: errorMessage(error), errorType: error instanceof ModelError ? error.kind : 'internal' } : {}),
  });

  for (;;) {
    if (signal.aborted) return end('aborted');
    if (turns >= options.maxTurns) return end('max_turns');
    turns++;
    const turn = turns;
    const calls = new TurnCalls(turn, options);
    let response;
    try {
      response = await model.complete(
        { system: options.system, messages, tools, maxTokens: options.maxTokens },
        {
          signal,
          onRetry: (n) => onEvent({ type: 'retry', turn, attempt: n.attempt, delay_ms: n.delayMs, reason: n.reason }),
          onToolUse: (block) => calls.start(block),
        },
      );
    } catch (err) {
      calls.cancelAllBut([]);
      // Let cancelled calls finish dying before the caller removes containers.
      await calls.settled();
      if (err instanceof AbortedError || signal.aborted) return end('aborted');
      if (err instanceof ModelError && err.kind === 'replay_mismatch') return end('replay_mismatch', err);
      if (err instanceof ModelError && err.kind === 'prompt_too_long') {
        // Shrink the oldest tool results to stubs and retry the same turn, once.
        if (!shrunk && shrinkOldToolResults(messages) > 0) {
          shrunk = true;
          turns--;
          continue;
        }
        return end('error', new ModelError(`${err.message}; the conversation does not fit the context window even with old tool results shrunk`, err.kind, 400, true));
      }
      return end('error', err);
    }
    shrunk = false;
    addUsage(usage, response.usage);
    messages.push({ role: 'assistant', content: response.content });
    onEvent({ type: 'assistant', turn, message: { content: response.content, stop_reason: response.stopReason, usage: response.usage } });

    const replyText = textOf(response.content);
    // A reply cut at max_tokens continues the text of the one before it.
    text = recoveries > 0 ? text + replyText : replyText;

    // Continue on content, not on stop_reason: a reply holding tool_use blocks needs its results.
    const toolUses = response.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
    calls.cancelAllBut(toolUses);
    if (toolUses.length === 0) {
      if (response.stopReason !== 'max_tokens') return end('completed');
      if (recoveries >= MAX_TOKENS_RECOVERIES) return end('max_tokens');
      recoveries++;
      messages.push({ role: 'user', content: [{ type: 'text', text: RESUME_PROMPT }] });
      continue;
    }
    recoveries = 0;

    const results = await calls.results(toolUses);
    toolCalls += toolUses.length;
    messages.push({ role: 'user', content: results });
  }
}

/** A call of a failed attempt still ran: the transcript keeps it, marked as discarded. */
function marked(event: RunEvent, cancel: AbortController): RunEvent {
  return cancel.signal.aborted && event.type === 'tool_call' ? { ...event, discarded: true } : event;
}

/**
 * The tool calls of one turn. A call starts as soon as its tool_use block is
 * complete, while the reply still streams, up to `parallel` at once. Its
 * events wait until the turn's assistant event is out, so a transcript reads
 * in order. Calls of a failed attempt that the final reply does not hold are
 * cancelled, left out of the results, and marked `discarded` in the transcript.
 */
class TurnCalls {
  private readonly started = new Map<string, { result: Promise<ToolResultBlock>; cancel: AbortController }>();
  private readonly held: { event: RunEvent; cancel: AbortController }[] = [];
  private released = false;
  private readonly limit: <T>(task: () => Promise<T>) => Promise<T>;

  constructor(
    private readonly turn: number,
    private readonly options: LoopOptions,
  ) {
    this.limit = createLimiter(options.parallel);
  }

  start(use: ToolUseBlock): void {
    if (this.started.has(use.id)) return;
    const cancel = new AbortController();
    const signal = AbortSignal.any([this.options.signal, cancel.signal]);
    const emit = (event: RunEvent) => {
      if (this.released) this.options.onEvent(marked(event, cancel));
      else this.held.push({ event, cancel });
    };
    const result = this.limit(() => runTool(use, this.turn, { ...this.options, signal, onEvent: emit }));
    this.started.set(use.id, { result, cancel });
  }

  /** Cancel calls the final reply does not hold; release the held events. */
  cancelAllBut(keep: ToolUseBlock[]): void {
    const ids = new Set(keep.map((u) => u.id));
    for (const [id, call] of this.started) if (!ids.has(id)) call.cancel.abort();
    this.released = true;
    for (const { event, cancel } of this.held.splice(0)) this.options.onEvent(marked(event, cancel));
  }

  /** Every started call has ended (cancelled ones included). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.started.values()].map((c) => c.result));
  }

  /** One tool_result per tool_use, same ids, in request order. */
  async results(uses: ToolUseBlock[]): Promise<ToolResultBlock[]> {
    for (const use of uses) this.start(use);
    return Promise.all(uses.map((use) => this.started.get(use.id)!.result));
  }
}

async function runTool(use: ToolUseBlock, turn: number, options: LoopOptions): Promise<ToolResultBlock> {
  const { onEvent } = options;
  const fail = (error: string, command: string | null): ToolResultBlock => {
    onEvent(failedCall(turn, use.id, command, error));
    return { type: 'tool_result', tool_use_id: use.id, content: error, is_error: true };
  };
  if (use.name !== BASH_TOOL_NAME) return fail(`Unknown tool "${use.name}". The only tool is "${BASH_TOOL_NAME}".`, null);
  const input = parseBashInput(use.input, options.timeoutSeconds);
  if ('error' in input) return fail(input.error, null);
  if (options.signal.aborted) return fail('Not run: the user cancelled the run.', input.command);

  onEvent({ type: 'tool_start', turn, tool_use_id: use.id, command: input.command });
  try {
    const result = await options.sandbox.exec(input.command, { timeoutSeconds: input.timeoutSeconds, signal: options.signal });
    onEvent({
      type: 'tool_call',
      turn,
      tool_use_id: use.id,
      command: result.command,
      exit_code: result.exitCode,
      stdout: result.stdout,
      stderr: result.stderr,
      timed_out: result.timedOut,
      oom_killed: result.oomKilled,
      truncated: result.truncated,
      duration_ms: result.durationMs,
      container_id: result.containerId,
      is_error: false,
    });
    return { type: 'tool_result', tool_use_id: use.id, content: toolResultText(result) };
  } catch (err) {
    return fail(`The sandbox failed to run the command: ${errorMessage(err)}`, input.command);
  }
}

function failedCall(turn: number, id: string, command: string | null, error: string): ToolCallEvent {
  return {
    type: 'tool_call',
    turn,
    tool_use_id: id,
    command,
    exit_code: null,
    stdout: '',
    stderr: '',
    timed_out: false,
    oom_killed: false,
    truncated: false,
    duration_ms: 0,
    container_id: null,
    is_error: true,
    error,
  };
}

export const SHRUNK_RESULT = '[output removed: the conversation outgrew the context window]';
const KEEP_RECENT_USER_MESSAGES = 2;

/** Replace the text of tool results older than the last two user messages with a stub. Returns how many changed. */
export function shrinkOldToolResults(messages: Message[]): number {
  const users = messages.map((m, i) => (m.role === 'user' ? i : -1)).filter((i) => i >= 0);
  const old = new Set(users.slice(0, Math.max(0, users.length - KEEP_RECENT_USER_MESSAGES)));
  let changed = 0;
  for (const i of old) {
    for (const block of messages[i]!.content) {
      if (block.type === 'tool_result' && block.content !== SHRUNK_RESULT) {
        block.content = SHRUNK_RESULT;
        changed++;
      }
    }
  }
  return changed;
}

function textOf(content: ContentBlock[]): string {
  return content
    .filter((b): b is Extract<ContentBlock, { type: 'text' }> => b.type === 'text')
    .map((b) => b.text)
    .join('');
}
