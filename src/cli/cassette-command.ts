import { readCassette } from '../model/cassette.js';
import type { CassetteTurn } from '../model/cassette.js';
import type { ContentBlock, ToolResultBlock } from '../types.js';
import { terminalSafe } from './terminal-safe.js';

/** Longer results are cut in the middle: a reviewer wants the start and the end (where errors are). */
const MAX_RESULT_LINES = 40;

export interface CassetteShowArgs {
  file: string;
}

/**
 * `sandloop cassette show FILE`: the recorded episode as a conversation, for
 * reviewing a re-recorded cassette in a pull request rather than reading
 * JSONL. A command's result is not on its own line: the loop sends it with
 * the next request, so it is taken from the next line's `request.last_user`.
 * Plain Markdown-ish text on stdout; a bad file is a ConfigError (exit 2).
 */
export async function cassetteShowCommand(args: CassetteShowArgs): Promise<number> {
  const turns = readCassette(args.file);
  process.stdout.write(renderCassette(args.file, turns));
  return 0;
}

export function renderCassette(file: string, turns: CassetteTurn[]): string {
  const out: string[] = [];
  const models = [...new Set(turns.map((t) => t.model).filter((m): m is string => !!m))];
  const tokens = (field: 'input_tokens' | 'output_tokens') => turns.reduce((sum, t) => sum + (t.usage?.[field] ?? 0), 0);
  out.push(`# Cassette ${file}`, '');
  out.push(
    `${turns.length} turn${turns.length === 1 ? '' : 's'} · model ${models.join(', ') || 'unknown'} · ${tokens('input_tokens')} input / ${tokens('output_tokens')} output tokens`,
  );

  turns.forEach((turn, i) => {
    // User text (the prompt on turn 1; a resume prompt or the next REPL prompt later).
    const said = (turn.request?.last_user ?? []).filter((b) => b.type === 'text').map((b) => (b as { text: string }).text.trim());
    if (said.some((t) => t !== '')) out.push('', i === 0 ? '## Prompt' : '## User', '', ...said.filter((t) => t !== '').map(terminalSafe));

    const stop = turn.stop_reason && turn.stop_reason !== 'tool_use' && turn.stop_reason !== 'end_turn' ? ` (${turn.stop_reason})` : '';
    out.push('', `## Turn ${i + 1}${stop}`);
    const next = turns[i + 1];
    const results = (next?.request?.last_user ?? []).filter((b): b is ToolResultBlock => b.type === 'tool_result');
    let uses = 0;
    for (const block of turn.content) {
      const rendered = renderBlock(block);
      if (rendered !== undefined) out.push('', rendered);
      if (block.type !== 'tool_use') continue;
      // The loop answers every tool_use of a turn in order, so results line up by position.
      const result = results[uses++];
      const body = result
        ? cut(result.content) + (result.is_error ? '\n(is_error)' : '')
        : next
          ? '(result not recorded)'
          : '(no result: the episode ended here)';
      out.push('', fenced(`${commandLine(block)}\n${body}`));
    }
  });
  return `${out.join('\n')}\n`;
}

function renderBlock(block: ContentBlock): string | undefined {
  switch (block.type) {
    case 'text':
      return block.text.trim() ? terminalSafe(block.text.trim()) : undefined;
    case 'thinking':
      return `_thinking:_ ${cut(block.thinking.trim())}`;
    case 'redacted_thinking':
      return '_(redacted thinking)_';
    default:
      return undefined;
  }
}

function commandLine(block: Extract<ContentBlock, { type: 'tool_use' }>): string {
  const command = (block.input as { command?: unknown } | null)?.command;
  if (block.name === 'bash' && typeof command === 'string') return `$ ${terminalSafe(command).replace(/\n/g, '\n  ')}`;
  return `[tool ${terminalSafe(block.name)}] ${terminalSafe(JSON.stringify(block.input))}`;
}

function cut(text: string): string {
  const lines = terminalSafe(text).split('\n');
  if (lines.length <= MAX_RESULT_LINES) return lines.join('\n');
  const half = MAX_RESULT_LINES / 2;
  return [...lines.slice(0, half), `[... ${lines.length - MAX_RESULT_LINES} lines cut ...]`, ...lines.slice(-half)].join('\n');
}

/** A code fence longer than any backtick run inside, so output cannot close it early. */
function fenced(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}console\n${text}\n${fence}`;
}
