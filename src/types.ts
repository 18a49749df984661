/**
 * The nouns of sandloop. These are plain data shapes shared by the loop, the
 * model adapters, the sandbox and the reports. Field names of everything that
 * is printed as JSON follow the Anthropic API and `claude -p` (snake_case).
 */

/** A content block as the Messages API speaks it (the subset sandloop uses). */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string; is_error?: boolean }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

export type ToolUseBlock = Extract<ContentBlock, { type: 'tool_use' }>;
export type ToolResultBlock = Extract<ContentBlock, { type: 'tool_result' }>;

export interface Message {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

/** Token counts, summed over a run. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export function emptyUsage(): Usage {
  return { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

export function addUsage(total: Usage, more: Partial<Usage> | undefined): void {
  if (!more) return;
  total.input_tokens += more.input_tokens ?? 0;
  total.output_tokens += more.output_tokens ?? 0;
  total.cache_creation_input_tokens += more.cache_creation_input_tokens ?? 0;
  total.cache_read_input_tokens += more.cache_read_input_tokens ?? 0;
}

/** A tool the model may call, in the Messages API's shape. */
export interface ToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/**
 * The outcome of one command in the sandbox. Every way a command can end is
 * data here; the sandbox throws only when it could not run the command at all.
 * When several reasons apply, the first one wins: aborted, timed out, OOM, exit.
 */
export interface ExecResult {
  command: string;
  /** The process's exit code; 124 on timeout (like timeout(1)); 137 on a kill. */
  exitCode: number;
  /** Captured stdout, already cut to the cap with a marker line in the middle. */
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** A process of the command was killed for lack of memory (even if the command went on). */
  oomKilled: boolean;
  /** The run was aborted (Ctrl-C) while this command ran. */
  aborted: boolean;
  /** Some output was left out (see the marker line in stdout/stderr). */
  truncated: boolean;
  durationMs: number;
  containerId: string;
  /** The timeout that applied, in seconds. */
  timeoutSeconds: number;
}

/** What the agent changed, relative to the task dir as it was copied in (`--mount copy`). */
export interface WorkspaceChanges {
  added: string[];
  modified: string[];
  deleted: string[];
  /** Changed paths that are binary: listed, not diffed. */
  binary: string[];
}

/** An archive entry refused on the way out of the sandbox, with why. */
export interface Rejected {
  path: string;
  reason: string;
}

/** What a copy-mode run did to its workspace: printed, written to changes.json and put in the JSON result. */
export interface WorkspaceReport {
  mode: 'copy';
  /** The --out directory: workspace/, changes.patch, changes.json. */
  out: string;
  copied: { files: number; bytes: number };
  /** What was left out of the copy, with why. */
  excluded: string[];
  changes: WorkspaceChanges;
  /** Entries of the finished workspace refused on the way out. */
  rejected: Rejected[];
  /** Task dir paths that changed while the run went on (then --apply is refused). */
  task_dir_changed: string[];
  /** The changes were applied to the task dir (--apply). */
  applied: boolean;
  /** Why --apply was refused, when it was. */
  apply_refused?: string;
}

/** Why a run ended. Decided in one place: the loop. */
export type RunStatus = 'completed' | 'max_turns' | 'max_tokens' | 'error' | 'aborted' | 'replay_mismatch';

/** What `runAgent` returns and what `--output-format json` prints. */
export interface RunResult {
  status: RunStatus;
  /** The final assistant text (the last reply's text blocks). */
  result: string;
  /** Model calls made. */
  turns: number;
  tool_calls: number;
  usage: Usage;
  duration_ms: number;
  run_id: string;
  model: string;
  /** Set when status is `error` or `replay_mismatch`: what failed (for a mismatch, with the diff). */
  error?: string;
  /** Set when status is `error`: the API's error type (`rate_limit_error`, `authentication_error` ...). */
  error_type?: string;
  /** `--mount copy`: what the run changed, and where the result went. */
  workspace?: WorkspaceReport;
  /** The whole conversation, so a REPL can carry history to the next prompt. */
  messages: Message[];
}

/**
 * What happens during a run, in order. `--output-format stream-json` prints
 * these one per line and `--transcript` writes them as JSONL.
 */
export type RunEvent =
  | {
      type: 'system';
      subtype: 'init';
      run_id: string;
      model: string;
      scripted: boolean;
      task_dir: string;
      image: string;
      max_turns: number;
    }
  | { type: 'user'; turn: number; text: string }
  | {
      type: 'assistant';
      turn: number;
      message: { content: ContentBlock[]; stop_reason: string | null; usage: Partial<Usage> };
    }
  | { type: 'tool_start'; turn: number; tool_use_id: string; command: string }
  | ToolCallEvent
  | { type: 'retry'; turn: number; attempt: number; delay_ms: number; reason: string }
  | { type: 'warning'; turn: number; message: string }
  | ({ type: 'result' } & Omit<RunResult, 'messages'>)
  | ({ type: 'workspace' } & WorkspaceReport);

export interface ToolCallEvent {
  type: 'tool_call';
  turn: number;
  tool_use_id: string;
  /** The command, or null when the tool input had no usable command. */
  command: string | null;
  exit_code: number | null;
  stdout: string;
  stderr: string;
  timed_out: boolean;
  oom_killed: boolean;
  truncated: boolean;
  duration_ms: number;
  container_id: string | null;
  /** The tool_result was sent with is_error (bad input, unknown tool, sandbox failure). */
  is_error: boolean;
  /** Why the call failed before it ran, when it did. */
  error?: string;
  /**
   * The call was started from a streamed reply that then failed and was
   * retried without it: it ran (or was killed), but the model never saw it.
   */
  discarded?: boolean;
}

/** One case of a batch, as read from a prompt file (and its suite's sandloop.yaml defaults). */
export interface CaseSpec {
  /** Unique within the batch; defaults to the file name without extension (and the index, in a suite file). */
  name: string;
  /** The prompt: the Markdown body, or the `prompt` field. */
  prompt: string;
  /** The file the case came from, absolute. */
  file: string;
  /** 1-based line where the case starts in its file. */
  line: number;
  /** Absolute path of a directory copied into the case's fresh workspace. */
  fixture?: string;
  max_turns?: number;
  /** Per bash call, seconds. */
  timeout?: number;
  /** A model id or `scripted:PATH` (PATH resolved relative to the case's file). */
  model?: string;
  /** Commands run after the agent finishes, each in a fresh sandbox container with the final workspace. */
  checks: string[];
  /** A regex the final assistant text must match; a leading `(?i)` makes it case-insensitive. */
  expect?: string;
  /** How many times to run the case (pass@k / pass^k). */
  repeat: number;
  tags: string[];
}

/** A prompt file that could not be read as cases. */
export interface InvalidCaseFile {
  file: string;
  line: number;
  /** `field: problem`, or the parse error. */
  message: string;
}

export type CaseStatus = 'pass' | 'fail' | 'error' | 'invalid';

export interface CheckResult {
  command: string;
  exit_code: number;
  passed: boolean;
  /** stdout and stderr of the check, cut to a few KB. */
  output: string;
  duration_ms: number;
  timed_out: boolean;
}

/** One finished attempt of a case: a line of results.jsonl. */
export interface CaseResult {
  name: string;
  file: string;
  /** 1..repeat. */
  attempt: number;
  status: CaseStatus;
  /** Why it did not pass, in one line. */
  reason?: string;
  /** The episode's own status. */
  run_status?: RunStatus;
  turns: number;
  tool_calls: number;
  duration_ms: number;
  usage: Usage;
  cost_usd: number;
  checks: CheckResult[];
  expect?: { pattern: string; matched: boolean };
  /** The final assistant text. */
  result?: string;
  /** The case's directory, relative to the results dir. */
  dir: string;
  tags: string[];
  error?: string;
}
