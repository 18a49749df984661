import type { RunEvent } from '../types.js';
import { terminalSafe } from './terminal-safe.js';

const EXCERPT_LINES = 4;
const EXCERPT_WIDTH = 160;

export interface Style {
  dim(s: string): string;
  bold(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
}

export function styleFor(stream: NodeJS.WriteStream): Style {
  const on = stream.isTTY === true && !process.env.NO_COLOR;
  const wrap = (code: number, reset: number) => (s: string) => (on ? `\x1b[${code}m${s}\x1b[${reset}m` : s);
  return { dim: wrap(2, 22), bold: wrap(1, 22), red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39) };
}

/**
 * `--output-format text`: what the model does, as it happens, on stderr.
 * Command output is shown as a short excerpt, made terminal-safe.
 */
export function textRenderer(write: (line: string) => void, style: Style): (event: RunEvent) => void {
  return (event) => {
    switch (event.type) {
      case 'system':
        write(style.dim(`sandloop ${event.run_id} · model ${event.model} · ${event.task_dir} → /workspace · image ${event.image}`));
        if (event.scripted) {
          const what = event.model.startsWith('replay:') ? 'replayed model: the turns come from a recorded cassette' : "scripted model: the model's turns are replayed from a file";
          write(style.yellow(`${what}, not generated; the commands really run.`));
        }
        break;
      case 'assistant': {
        // The final reply's text is the answer, printed on stdout; show only the narration between tool calls.
        const content = event.message.content;
        if (!content.some((b) => b.type === 'tool_use')) break;
        for (const block of content) {
          if (block.type === 'text' && block.text.trim()) write(terminalSafe(block.text.trim()));
        }
        break;
      }
      case 'tool_start':
        write(style.bold(`$ ${terminalSafe(oneLine(event.command))}`));
        break;
      case 'tool_call': {
        if (event.is_error) {
          write(style.red(`  ✗ ${terminalSafe(event.error ?? 'tool call failed')}`));
          break;
        }
        for (const line of excerpt(event.stdout + (event.stderr ? `${event.stdout ? '\n' : ''}${event.stderr}` : ''))) {
          write(style.dim(`  ${line}`));
        }
        const secs = (event.duration_ms / 1000).toFixed(2);
        const what = event.timed_out ? 'timed out' : event.oom_killed ? 'out of memory' : `exit ${event.exit_code}`;
        const mark = event.exit_code === 0 ? style.green('✓') : style.red('✗');
        write(`  ${mark} ${style.dim(`${what} · ${secs} s${event.truncated ? ' · output truncated' : ''}`)}`);
        break;
      }
      case 'workspace': {
        const c = event.changes;
        write(`workspace: ${c.added.length} added, ${c.modified.length} modified, ${c.deleted.length} deleted${c.binary.length ? ` (${c.binary.length} binary, listed not diffed)` : ''} → ${event.out}/ (workspace/, changes.patch, changes.json)${event.applied ? '; applied to the task dir' : ''}`);
        for (const r of event.rejected) write(style.yellow(`  refused ${terminalSafe(r.path)}: ${terminalSafe(r.reason)}`));
        if (event.task_dir_changed.length) write(style.yellow(`  the task dir changed during the run: ${event.task_dir_changed.slice(0, 5).map(terminalSafe).join(', ')}`));
        break;
      }
      case 'warning':
        write(style.yellow(`  ! ${terminalSafe(event.message)}`));
        break;
      case 'retry':
        write(style.yellow(`  ↻ retry ${event.attempt} in ${(event.delay_ms / 1000).toFixed(1)} s: ${event.reason}`));
        break;
      case 'result': {
        const tokens = `${event.usage.input_tokens} in / ${event.usage.output_tokens} out tokens`;
        const line = `${event.status} · ${plural(event.turns, 'turn')} · ${plural(event.tool_calls, 'tool call')} · ${(event.duration_ms / 1000).toFixed(1)} s · ${tokens}`;
        write(event.status === 'completed' ? style.green(line) : style.red(line));
        if (event.error) write(style.red(`error: ${terminalSafe(event.error)}`));
        break;
      }
      default:
        break;
    }
  };
}

function oneLine(command: string): string {
  const first = command.split('\n')[0]!;
  return command.includes('\n') ? `${first} …` : first;
}

function excerpt(text: string): string[] {
  const lines = text.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
  const shown = lines.slice(0, EXCERPT_LINES).map((l) => terminalSafe(l.length > EXCERPT_WIDTH ? `${l.slice(0, EXCERPT_WIDTH)}…` : l));
  if (lines.length > EXCERPT_LINES) shown.push(`… ${lines.length - EXCERPT_LINES} more lines`);
  return shown;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
