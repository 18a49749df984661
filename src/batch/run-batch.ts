import { join, relative, resolve, sep } from 'node:path';
import { ConfigError, errorMessage } from '../errors.js';
import { RateGate } from '../model/rate-gate.js';
import type { RunOptions } from '../options.js';
import { connectDocker, limitDockerRequests } from '../sandbox/docker-client.js';
import { ensureImage } from '../sandbox/image.js';
import { DEFAULT_IMAGE } from '../sandbox/image.js';
import { type CaseResult, type CaseSpec, type InvalidCaseFile, addUsage, emptyUsage } from '../types.js';
import { loadCases } from './case-files.js';
import { passAtK, passHatK } from './pass-at-k.js';
import { loadPrices } from './prices.js';
import type { BatchProgress } from './progress.js';
import { ResultsDir, attemptKey, isFinished } from './results-dir.js';
import { runCase, validateCase } from './run-case.js';
import { createLimiter } from '../loop/limiter.js';

export interface BatchOptions {
  /** Files, folders or globs of prompt files. */
  inputs: string[];
  /** Most episodes at once. Default 4. */
  concurrency?: number;
  /** The results directory. Default `sandloop-results/<timestamp>`. */
  out?: string;
  /** Keep only cases whose name contains this, or that carry it as a tag. */
  filter?: string;
  /** Attempts of each case that does not set `repeat`. Default 1. */
  repeat?: number;
  /** A results directory to continue: finished attempts are skipped, errored and missing ones run. */
  resume?: string;
  /** Stop starting new cases once the estimated spend reaches this. */
  maxCostUsd?: number;
  /** A JSON price table merged over the built-in one. */
  prices?: string;
  /** Most short Docker API requests in flight across the batch. Default 8. */
  dockerConcurrency?: number;
  /** The run flags: defaults for every case. */
  defaults: RunOptions;
  /** First Ctrl-C: start no new case. */
  stop: AbortSignal;
  /** Second Ctrl-C: kill the running episodes. */
  kill: AbortSignal;
  progress: (total: number, done: Partial<Record<'pass' | 'fail' | 'error' | 'invalid', number>>) => BatchProgress;
}

export interface CaseStats {
  name: string;
  attempts: number;
  passed: number;
  pass_at_1: number;
  /** k = the number of attempts. */
  pass_at_k: number;
  pass_hat_k: number;
  k: number;
}

export interface BatchSummary {
  results_dir: string;
  total: number;
  pass: number;
  fail: number;
  error: number;
  invalid: number;
  /** Attempts not run: interrupted, or stopped by --max-cost-usd. */
  not_run: number;
  interrupted: boolean;
  stopped_by_cost: boolean;
  usage: ReturnType<typeof emptyUsage>;
  cost_usd: number;
  duration_ms: number;
  cases: CaseStats[];
  /** Every attempt's latest result, in case order. */
  results: CaseResult[];
}

/**
 * Run a batch: every case × attempt as its own episode in its own fresh
 * workspace, at most `concurrency` at once, with checks, results streamed to
 * results.jsonl, and a summary. Invalid prompt files are results too.
 */
export async function runBatch(o: BatchOptions): Promise<BatchSummary> {
  const started = Date.now();
  const loaded = await loadCases(o.inputs);
  // Cassette and results directories can sit inside a suite folder: their .jsonl files are not prompt files.
  const own = [o.defaults.record, o.defaults.replay, o.out, o.resume].filter((d): d is string => !!d).map((d) => resolve(d) + sep);
  const mine = (file: string) => !own.some((d) => file.startsWith(d));
  const all = loaded.cases.filter((c) => mine(c.file));
  const invalid = loaded.invalid.filter((f) => mine(f.file));
  const cases = o.filter ? all.filter((c) => c.name.includes(o.filter!) || c.tags.includes(o.filter!)) : all;
  if (cases.length === 0 && invalid.length === 0) throw new ConfigError(`no case matches${o.filter ? ` --filter ${o.filter}` : ''}`);
  for (const spec of cases) {
    try {
      validateCase(spec, o.defaults);
    } catch (err) {
      throw new ConfigError(`case ${spec.name} (${relative(process.cwd(), spec.file)}): ${errorMessage(err)}`);
    }
  }
  const prices = loadPrices(o.prices);
  const dir = new ResultsDir(resolve(o.resume ?? o.out ?? join('sandloop-results', new Date().toISOString().replace(/[:.]/g, '-'))));
  const recorded = dir.recorded();

  const jobs: { spec: CaseSpec; attempt: number }[] = [];
  for (const spec of cases) {
    const repeat = spec.repeat > 1 ? spec.repeat : (o.repeat ?? spec.repeat);
    for (let attempt = 1; attempt <= repeat; attempt++) jobs.push({ spec, attempt });
  }
  const latest = new Map<string, CaseResult>();
  const invalidResults = invalidResultsOf(invalid);
  for (const r of invalidResults) {
    if (!isFinished(recorded.get(attemptKey(r.name, 1)))) dir.append(r);
    latest.set(attemptKey(r.name, 1), r);
  }
  const todo = jobs.filter((j) => !isFinished(recorded.get(attemptKey(j.spec.name, j.attempt))));
  for (const j of jobs) {
    const prior = recorded.get(attemptKey(j.spec.name, j.attempt));
    if (isFinished(prior)) latest.set(attemptKey(j.spec.name, j.attempt), prior!);
  }
  const count = (s: CaseResult['status']) => [...latest.values()].filter((r) => r.status === s).length;
  const progress = o.progress(jobs.length + invalid.length, { pass: count('pass'), fail: count('fail'), invalid: count('invalid') });
  if (o.resume) progress.note(`resuming ${dir.path}: ${jobs.length - todo.length} attempts already finished, ${todo.length} to run`);

  const docker = o.defaults.docker ?? (await connectDocker());
  limitDockerRequests(docker, o.dockerConcurrency ?? 8);
  await ensureImage(docker, o.defaults.image ?? DEFAULT_IMAGE, (line) => progress.note(line));
  const rateGate = new RateGate();
  const limit = createLimiter(o.concurrency ?? 4);
  let spent = [...latest.values()].reduce((sum, r) => sum + r.cost_usd, 0);
  let stoppedByCost = false;
  let notRun = 0;

  await Promise.all(
    todo.map(({ spec, attempt }) =>
      limit(async () => {
        if (o.stop.aborted || stoppedByCost) return void notRun++;
        if (o.maxCostUsd !== undefined && spent >= o.maxCostUsd) {
          stoppedByCost = true;
          progress.note(`--max-cost-usd ${o.maxCostUsd}: $${spent.toFixed(4)} spent; starting no new case`);
          return void notRun++;
        }
        const key = attemptKey(spec.name, attempt);
        progress.started(key, `${spec.name}${attempt > 1 ? ` #${attempt}` : ''}`);
        const result = await runCase(spec, attempt, {
          docker,
          resultsDir: dir.path,
          defaults: o.defaults,
          prices,
          rateGate,
          signal: o.kill,
          onEvent: (e) => progress.event(key, e),
        });
        if (result) {
          dir.append(result);
          latest.set(key, result);
          spent += result.cost_usd;
        } else notRun++;
        progress.finished(key, result);
      }),
    ),
  );
  progress.stop();

  const results = [...invalidResults, ...jobs.map((j) => latest.get(attemptKey(j.spec.name, j.attempt))).filter((r): r is CaseResult => !!r)];
  const summary = summarize(dir.path, cases, results, { interrupted: o.stop.aborted, stoppedByCost, notRun, started });
  dir.writeJson('summary.json', summary);
  return summary;
}

function summarize(
  resultsDir: string,
  cases: CaseSpec[],
  results: CaseResult[],
  s: { interrupted: boolean; stoppedByCost: boolean; notRun: number; started: number },
): BatchSummary {
  const usage = emptyUsage();
  for (const r of results) addUsage(usage, r.usage);
  const by = (status: CaseResult['status']) => results.filter((r) => r.status === status).length;
  const stats = cases.map((c) => {
    const mine = results.filter((r) => r.name === c.name);
    const n = mine.length;
    const passed = mine.filter((r) => r.status === 'pass').length;
    return { name: c.name, attempts: n, passed, k: n, pass_at_1: passAtK(n, passed, 1), pass_at_k: passAtK(n, passed, n), pass_hat_k: passHatK(n, passed, n) };
  });
  return {
    results_dir: resultsDir,
    total: results.length + s.notRun,
    pass: by('pass'),
    fail: by('fail'),
    error: by('error'),
    invalid: by('invalid'),
    not_run: s.notRun,
    interrupted: s.interrupted,
    stopped_by_cost: s.stoppedByCost,
    usage,
    cost_usd: results.reduce((sum, r) => sum + r.cost_usd, 0),
    duration_ms: Date.now() - s.started,
    cases: stats,
    results,
  };
}

/** One result per problem, named `file:line` (with a counter when a line has several). */
function invalidResultsOf(invalid: InvalidCaseFile[]): CaseResult[] {
  const seen = new Map<string, number>();
  return invalid.map((f) => {
    const base = `${relative(process.cwd(), f.file)}:${f.line}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    return invalidResult(f, n === 1 ? base : `${base} (${n})`);
  });
}

function invalidResult(f: InvalidCaseFile, name: string): CaseResult {
  return {
    name,
    file: f.file,
    attempt: 1,
    status: 'invalid',
    reason: `invalid prompt file: ${relative(process.cwd(), f.file)}:${f.line}: ${f.message}`,
    turns: 0,
    tool_calls: 0,
    duration_ms: 0,
    usage: emptyUsage(),
    cost_usd: 0,
    checks: [],
    dir: '',
    tags: [],
  };
}
