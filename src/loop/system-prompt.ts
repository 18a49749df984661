/** The seed's system prompt, adapted to a fresh container per call. */
export const DEFAULT_SYSTEM_PROMPT =
  'You are a coding agent at /workspace. Use the bash tool to inspect files, run commands and solve the task. ' +
  'Act, don\'t explain: run commands instead of describing them. When the task is done, reply with a short summary and no tool call.';

export interface SystemPromptOptions {
  /** Replaces the default system prompt. */
  system?: string;
  /** Appended to the (default or replaced) system prompt. */
  appendSystem?: string;
}

export function buildSystemPrompt(options: SystemPromptOptions = {}): string {
  const base = options.system ?? DEFAULT_SYSTEM_PROMPT;
  return options.appendSystem ? `${base}\n\n${options.appendSystem}` : base;
}
