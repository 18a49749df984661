import { createLogUpdate } from 'log-update';
import { terminalSafe } from '../cli/terminal-safe.js';
import type { CaseResult, RunEvent } from '../types.js';

export interface BatchProgress {
  started(key: string, name: string): void;
  event(key: string, event: RunEvent): void;
  finished(key: string, result: CaseResult | undefined): void;
  note(line: string): void;
  stop(): void;
}

interface Counts {
  total: number;
  done: number;
  pass: number;
  fail: number;
  error: number;
  invalid: number;
  tokens: number;
  cost: number;
}

const fmtTime = (ms: number) => {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
};

export function statusLine(c: Counts, startedAt: number): string {
  const elapsed = Date.now() - startedAt;
  const eta = c.done > 0 && c.done < c.total ? ` · ETA ${fmtTime((elapsed / c.done) * (c.total - c.done))}` : '';
  return `${c.done}/${c.total} done · ${c.pass} pass · ${c.fail} fail · ${c.error} error${c.invalid ? ` · ${c.invalid} invalid` : ''} · ${fmtTime(elapsed)}${eta} · ${c.tokens} tokens · $${c.cost.toFixed(4)}`;
}

function finishedLine(r: CaseResult): string {
  const what = r.reason ? ` — ${r.reason}` : '';
  return `${r.status.toUpperCase().padEnd(7)} ${r.name}${r.attempt > 1 ? ` #${r.attempt}` : ''} (${r.turns} turns, ${r.tool_calls} calls, ${(r.duration_ms / 1000).toFixed(1)} s)${what}`;
}

/**
 * On a TTY: a live display (log-update) with the counts, elapsed time, ETA,
 * tokens and cost, and one line per running case with its turn and command.
 * Otherwise: one plain line per finished case.
 */
export function createProgress(stream: NodeJS.WriteStream, total: number, initial: Partial<Counts> = {}): BatchProgress {
  const counts: Counts = { total, done: 0, pass: 0, fail: 0, error: 0, invalid: 0, tokens: 0, cost: 0, ...initial };
  const startedAt = Date.now();
  const running = new Map<string, { name: string; turn: number; command: string }>();
  const tally = (r: CaseResult) => {
    counts.done++;
    counts[r.status]++;
    counts.tokens += r.usage.input_tokens + r.usage.output_tokens;
    counts.cost += r.cost_usd;
  };
  if (!stream.isTTY) {
    return {
      started: () => {},
      event: () => {},
      finished: (_key, r) => {
        if (!r) return;
        tally(r);
        stream.write(`${terminalSafe(finishedLine(r))}   [${statusLine(counts, startedAt)}]\n`);
      },
      note: (line) => stream.write(`${terminalSafe(line)}\n`),
      stop: () => {},
    };
  }
  // A pseudo-terminal without a size (some CI runners, `script`) reports 0 rows: log-update would then show nothing.
  const sized = {
    write: (text: string) => stream.write(text),
    get rows() {
      return stream.rows || 24;
    },
    get columns() {
      return stream.columns || 100;
    },
  } as unknown as NodeJS.WriteStream;
  const live = createLogUpdate(sized, { showCursor: true });
  const width = () => Math.max(40, (stream.columns || 100) - 1);
  const render = () => {
    const lines = [statusLine(counts, startedAt)];
    for (const r of running.values()) lines.push(`  ▸ ${r.name} · turn ${r.turn}${r.command ? ` · $ ${r.command}` : ''}`);
    live(lines.map((l) => terminalSafe(l).slice(0, width())).join('\n'));
  };
  const timer = setInterval(render, 250);
  timer.unref();
  return {
    started: (key, name) => {
      running.set(key, { name, turn: 0, command: '' });
      render();
    },
    event: (key, e) => {
      const r = running.get(key);
      if (!r) return;
      if (e.type === 'assistant') r.turn = e.turn;
      if (e.type === 'tool_start') r.command = e.command.split('\n')[0]!;
    },
    finished: (key, result) => {
      running.delete(key);
      if (result) {
        tally(result);
        live.clear();
        stream.write(`${terminalSafe(finishedLine(result))}\n`);
      }
      render();
    },
    note: (line) => {
      live.clear();
      stream.write(`${terminalSafe(line)}\n`);
      render();
    },
    stop: () => {
      clearInterval(timer);
      render();
      live.done();
    },
  };
}
