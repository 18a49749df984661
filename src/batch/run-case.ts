import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { errorMessage } from '../errors.js';
import type { RateGate } from '../model/rate-gate.js';
import { type RunOptions, resolveOptions } from '../options.js';
import { invokingUser } from '../sandbox/container-spec.js';
import { DEFAULT_IMAGE } from '../sandbox/image.js';
import { AgentSession } from '../session.js';
import { type CaseResult, type CaseSpec, type CheckResult, type RunEvent, type RunResult, emptyUsage } from '../types.js';
import { expectRegExp } from './case-schema.js';
import { runChecks } from './checks.js';
import { type PriceTable, costOf } from './prices.js';

export interface CaseContext {
  docker: Docker;
  resultsDir: string;
  /** The batch's run flags: defaults for every case. */
  defaults: RunOptions;
  prices: PriceTable;
  rateGate: RateGate;
  /** Fires on the second Ctrl-C: running episodes are killed. */
  signal: AbortSignal;
  onEvent?: (event: RunEvent) => void;
}

/** A case's directory name: its name made safe for a path. */
export function caseSlug(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 120) || 'case';
}

/**
 * The run options of one case: the batch's flags, overridden by the case's
 * own fields. `--model scripted:DIR` plays `DIR/<case name>.json` for each case.
 */
export function caseOptions(spec: CaseSpec, defaults: RunOptions, attempt = 1): RunOptions {
  // In a batch, --record and --replay name a directory with one cassette per case attempt.
  const cassette = (dir: string | undefined) => (dir ? join(dir, `${caseSlug(spec.name)}${attempt > 1 ? `.${attempt}` : ''}.jsonl`) : undefined);
  return {
    ...defaults,
    record: cassette(defaults.record),
    replay: cassette(defaults.replay),
    model: spec.model ?? perCaseScript(defaults.model, spec.name),
    maxTurns: spec.max_turns ?? defaults.maxTurns,
    timeout: spec.timeout ?? defaults.timeout,
    mount: defaults.mount ?? 'copy',
  };
}

/** Check a case's options before anything runs, so a bad setting is a config error for the whole batch. */
export function validateCase(spec: CaseSpec, defaults: RunOptions): void {
  resolveOptions({ ...caseOptions(spec, defaults), taskDir: spec.fixture ?? tmpdir(), out: undefined, allowDangerousMount: true }, DEFAULT_IMAGE);
}

/**
 * One attempt of one case: a fresh workspace from its fixture, the episode,
 * then its checks and `expect`. Undefined when the batch was interrupted
 * while it ran (it is not recorded, so --resume runs it again).
 */
export async function runCase(spec: CaseSpec, attempt: number, ctx: CaseContext): Promise<CaseResult | undefined> {
  const dir = join('cases', caseSlug(spec.name), String(attempt));
  const caseDir = join(ctx.resultsDir, dir);
  rmSync(caseDir, { recursive: true, force: true });
  mkdirSync(caseDir, { recursive: true });
  const options = caseOptions(spec, ctx.defaults, attempt);
  const started = Date.now();
  const base = { name: spec.name, file: spec.file, attempt, dir, tags: spec.tags };
  const failure = (status: 'error', reason: string): CaseResult => ({
    ...base,
    status,
    reason,
    turns: 0,
    tool_calls: 0,
    duration_ms: Date.now() - started,
    usage: emptyUsage(),
    cost_usd: 0,
    checks: [],
    error: reason,
  });

  // The fixture is never mounted: `copy` fills a volume from it, `rw` binds a host copy of it.
  const empty = options.mount === 'copy' && !spec.fixture ? mkdtempSync(join(tmpdir(), 'sandloop-empty-')) : undefined;
  const taskDir = options.mount === 'copy' ? (spec.fixture ?? empty!) : hostCopy(spec.fixture, join(caseDir, 'workspace'));
  let run: RunResult;
  let session: AgentSession | undefined;
  try {
    session = await AgentSession.open({
      ...options,
      taskDir,
      out: options.mount === 'copy' ? caseDir : undefined,
      transcript: join(caseDir, 'transcript.jsonl'),
      docker: ctx.docker,
      rateGate: ctx.rateGate,
      signal: ctx.signal,
      onEvent: ctx.onEvent,
      allowDangerousMount: true,
    });
    run = await session.run(spec.prompt);
    if (run.status !== 'aborted') await session.finish();
  } catch (err) {
    return failure('error', `infrastructure: ${errorMessage(err)}`);
  } finally {
    await session?.close().catch(() => {});
    if (empty) rmSync(empty, { recursive: true, force: true });
  }
  if (run.status === 'aborted') return undefined;

  const summary = {
    ...base,
    run_status: run.status,
    turns: run.turns,
    tool_calls: run.tool_calls,
    usage: run.usage,
    cost_usd: costOf(run.model, run.usage, ctx.prices),
    result: run.result,
  };
  if (run.status === 'replay_mismatch') {
    // The recorded behaviour no longer holds: a regression, not an infrastructure problem.
    const reason = `replay mismatch: ${(run.error ?? '').split('\n')[0]}`;
    return { ...summary, status: 'fail', reason, checks: [], duration_ms: Date.now() - started, error: run.error };
  }
  if (run.status !== 'completed') {
    const reason = run.status === 'error' ? `API error: ${run.error}` : `stopped: ${run.status}`;
    return { ...summary, status: 'error', reason, checks: [], duration_ms: Date.now() - started, ...(run.error ? { error: run.error } : {}) };
  }
  const resolved = resolveOptions({ ...options, taskDir: caseDir, out: undefined, mount: 'rw', allowDangerousMount: true }, DEFAULT_IMAGE);
  let checks: CheckResult[];
  try {
    checks = await runChecks(ctx.docker, spec.checks, join(caseDir, 'workspace'), caseDir, {
      image: resolved.image,
      memoryBytes: resolved.memoryBytes,
      cpus: resolved.cpus,
      pids: resolved.pids,
      network: resolved.network,
      runtime: resolved.runtime,
      fileSizeMax: resolved.workspaceMaxBytes,
      user: invokingUser(),
      timeoutSeconds: resolved.timeoutSeconds,
    }, ctx.signal);
  } catch (err) {
    return { ...summary, status: 'error', reason: `infrastructure: checks: ${errorMessage(err)}`, checks: [], duration_ms: Date.now() - started };
  }
  // Killed by a second Ctrl-C while checking: not finished, so --resume runs it again.
  if (ctx.signal.aborted) return undefined;
  const broken = checks.find((c) => c.exit_code === -1);
  if (broken) return { ...summary, status: 'error', reason: `infrastructure: ${broken.output}`, checks, duration_ms: Date.now() - started };
  const expect = spec.expect === undefined ? undefined : { pattern: spec.expect, matched: expectRegExp(spec.expect).test(run.result) };
  const failed = checks.find((c) => !c.passed);
  const reason = failed
    ? `check failed (exit ${failed.exit_code}${failed.timed_out ? ', timed out' : ''}): ${failed.command}`
    : expect && !expect.matched
      ? `expect /${spec.expect}/ did not match the final answer`
      : undefined;
  return {
    ...summary,
    status: reason ? 'fail' : 'pass',
    ...(reason ? { reason } : {}),
    checks,
    ...(expect ? { expect } : {}),
    duration_ms: Date.now() - started,
  };
}

function perCaseScript(model: RunOptions['model'], name: string): RunOptions['model'] {
  if (typeof model !== 'string' || !model.startsWith('scripted:')) return model;
  const path = model.slice('scripted:'.length);
  return existsSync(path) && statSync(path).isDirectory() ? `scripted:${join(path, `${caseSlug(name)}.json`)}` : model;
}

function hostCopy(fixture: string | undefined, dest: string): string {
  mkdirSync(dest, { recursive: true });
  if (fixture) cpSync(fixture, dest, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  return dest;
}
