import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CaseResult } from '../types.js';

/**
 * The results directory: `results.jsonl` gets one line per finished attempt,
 * appended (synchronously) the moment it finishes, so a crash loses nothing
 * and `--resume` knows what is done.
 */
export class ResultsDir {
  readonly jsonl: string;

  constructor(readonly path: string) {
    mkdirSync(path, { recursive: true });
    this.jsonl = join(path, 'results.jsonl');
  }

  append(result: CaseResult): void {
    appendFileSync(this.jsonl, `${JSON.stringify(result)}\n`);
  }

  /** The last recorded result of every attempt, keyed by `name#attempt`. A torn last line is ignored. */
  recorded(): Map<string, CaseResult> {
    const out = new Map<string, CaseResult>();
    if (!existsSync(this.jsonl)) return out;
    for (const line of readFileSync(this.jsonl, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        const r = JSON.parse(line) as CaseResult;
        out.set(attemptKey(r.name, r.attempt), r);
      } catch {
        // A line cut by a crash: that attempt runs again.
      }
    }
    return out;
  }

  writeJson(name: string, value: unknown): void {
    writeFileSync(join(this.path, name), `${JSON.stringify(value, null, 2)}\n`);
  }
}

export function attemptKey(name: string, attempt: number): string {
  return `${name}#${attempt}`;
}

/** Finished for good: --resume skips these, and reruns errors and whatever is missing. */
export function isFinished(result: CaseResult | undefined): boolean {
  return result !== undefined && result.status !== 'error';
}
