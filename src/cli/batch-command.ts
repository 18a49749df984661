import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { createProgress } from '../batch/progress.js';
import { type BatchSummary, runBatch } from '../batch/run-batch.js';
import { ConfigError } from '../errors.js';
import { setVerbose } from '../log.js';
import { toJUnitXml } from '../report/junit.js';
import { dotEnvFile, loadEnvironment } from './dotenv.js';
import { EXIT } from './exit-codes.js';
import { type RunFlags, runOptionsFrom } from './run-options.js';
import { terminalSafe } from './terminal-safe.js';

export interface BatchArgs extends RunFlags {
  inputs: string[];
  concurrency: string | number;
  out?: string;
  filter?: string;
  repeat?: string | number;
  resume?: string;
  maxCostUsd?: string | number;
  prices?: string;
  junit?: string;
  mount?: string;
  verbose: boolean;
}

const say = (line: string) => process.stderr.write(`${line}\n`);

/** `sandloop batch`: run folders of prompt files; exit 0 all pass, 1 a failure, 2 config/invalid, 3 errors only, 130 interrupted. */
export async function batchCommand(args: BatchArgs): Promise<number> {
  setVerbose(args.verbose);
  if (args.inputs.length === 0) throw new ConfigError('name the prompt files, folders or globs to run');
  const stop = new AbortController();
  const kill = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals === 1) {
      say(`${signal}: starting no new case; running ones finish (Ctrl-C again to kill them)`);
      stop.abort();
    } else if (signals === 2) {
      say(`${signal} again: killing the running cases (a third time exits at once)`);
      kill.abort();
    } else {
      say(`${signal} a third time: exiting now; leftover containers carry the label sandloop.run (sandloop gc)`);
      process.exit(EXIT.aborted);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const { taskDir: _unused, ...flags } = args;
    const summary = await runBatch({
      inputs: args.inputs,
      concurrency: positiveInt(args.concurrency, '--concurrency'),
      out: args.out,
      filter: args.filter,
      repeat: args.repeat === undefined ? undefined : positiveInt(args.repeat, '--repeat'),
      resume: args.resume,
      maxCostUsd: args.maxCostUsd === undefined ? undefined : nonNegative(args.maxCostUsd, '--max-cost-usd'),
      prices: args.prices,
      defaults: { ...runOptionsFrom(flags), mount: args.mount ?? 'copy', environment: loadEnvironment(), secretFiles: [dotEnvFile()] },
      stop: stop.signal,
      kill: kill.signal,
      progress: (total, done) => createProgress(process.stderr, total, done),
    });
    if (args.junit) writeFileSync(args.junit, toJUnitXml(summary.results, { suiteName: 'sandloop batch' }));
    printSummary(summary, args.junit);
    return batchExitCode(summary);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export function batchExitCode(s: BatchSummary): number {
  if (s.interrupted) return EXIT.aborted;
  if (s.invalid > 0) return EXIT.usage;
  if (s.fail > 0) return EXIT.failed;
  if (s.error > 0) return EXIT.docker;
  return EXIT.completed;
}

function printSummary(s: BatchSummary, junit?: string): void {
  const rows = s.results.map((r) => [
    `${r.name}${r.attempt > 1 ? ` #${r.attempt}` : ''}`,
    r.status,
    String(r.turns),
    String(r.tool_calls),
    `${(r.duration_ms / 1000).toFixed(1)}s`,
    String(r.usage.input_tokens + r.usage.output_tokens),
    `$${r.cost_usd.toFixed(4)}`,
    r.reason ?? '',
  ]);
  const head = ['case', 'status', 'turns', 'calls', 'time', 'tokens', 'cost', 'failing check / reason'];
  const widths = head.map((h, i) => Math.min(i === 0 ? 40 : 60, Math.max(h.length, ...rows.map((r) => r[i]!.length))));
  const line = (cells: string[]) => cells.map((c, i) => terminalSafe(c).slice(0, widths[i]).padEnd(widths[i]!)).join('  ').trimEnd();
  const out = [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  const multi = s.cases.filter((c) => c.attempts > 1);
  if (multi.length) {
    out.push('', 'repeats: case  passed/attempts  pass@1  pass@k  pass^k');
    for (const c of multi) out.push(`  ${c.name}  ${c.passed}/${c.attempts}  ${c.pass_at_1.toFixed(2)}  ${c.pass_at_k.toFixed(2)}  ${c.pass_hat_k.toFixed(2)}  (k=${c.k})`);
  }
  out.push(
    '',
    `${s.pass} pass · ${s.fail} fail · ${s.error} error · ${s.invalid} invalid${s.not_run ? ` · ${s.not_run} not run` : ''} · ${s.usage.input_tokens + s.usage.output_tokens} tokens · $${s.cost_usd.toFixed(4)} · ${(s.duration_ms / 1000).toFixed(1)} s`,
  );
  if (s.interrupted) out.push(`interrupted: continue with  sandloop batch --resume ${relative(process.cwd(), s.results_dir) || '.'} ...`);
  if (s.stopped_by_cost) out.push('stopped starting cases: --max-cost-usd reached');
  out.push(`results: ${s.results_dir}${junit ? ` · JUnit: ${junit}` : ''}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

function positiveInt(value: string | number, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${flag} must be a positive integer, got '${value}'`);
  return n;
}

function nonNegative(value: string | number, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new ConfigError(`${flag} must be a number of US dollars, got '${value}'`);
  return n;
}
