import type { ToolSpec } from '../types.js';

export const BASH_TOOL_NAME = 'bash';

/**
 * A custom tool rather than Anthropic's `bash_20250124`, whose description
 * promises a persistent shell. Ours must say what really persists.
 */
export function bashTool(readOnlyWorkspace = false): ToolSpec {
  const persistence = readOnlyWorkspace
    ? '/workspace is mounted read-only: you can read it but writes fail.'
    : 'Only files under /workspace persist between calls.';
  return {
    name: BASH_TOOL_NAME,
    description: [
      'Run a bash command in a sandbox and get back its exit code, stdout and stderr.',
      'Each call runs in a fresh, throwaway container; the working directory is /workspace.',
      `${persistence} The current directory, environment variables, /tmp and background processes do not: a process started in one call is gone when the call returns.`,
      'There is no network access unless the user enabled it. Long output is cut in the middle; prefer commands with concise output (head, tail, grep, wc).',
    ].join(' '),
    input_schema: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The bash command to run.' },
        timeout: {
          type: 'number',
          description: 'Optional timeout in seconds; it cannot exceed the limit the user set.',
        },
      },
      required: ['command'],
    },
  };
}

export type BashInput = { command: string; timeoutSeconds: number } | { error: string };

/** Validate the model's tool input. Bad input is an error message for the model, never an exception. */
export function parseBashInput(input: unknown, maxTimeoutSeconds: number): BashInput {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { error: `Invalid input for bash: expected an object with a "command" string, got ${describe(input)}.` };
  }
  const { command, timeout } = input as Record<string, unknown>;
  if (command === undefined) return { error: 'Invalid input for bash: "command" is required.' };
  if (typeof command !== 'string') {
    return { error: `Invalid input for bash: "command" must be a string, got ${describe(command)}.` };
  }
  if (command.trim() === '') return { error: 'Invalid input for bash: "command" is empty.' };
  let timeoutSeconds = maxTimeoutSeconds;
  if (timeout !== undefined && timeout !== null) {
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0) {
      return { error: `Invalid input for bash: "timeout" must be a positive number of seconds, got ${describe(timeout)}.` };
    }
    timeoutSeconds = Math.min(timeout, maxTimeoutSeconds);
  }
  return { command, timeoutSeconds };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  return typeof value;
}
