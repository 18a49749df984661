import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { errorMessage } from '../errors.js';
import { DockerSandbox, type DockerSandboxOptions } from '../sandbox/docker-sandbox.js';
import { newRunId } from '../sandbox/labels.js';
import type { CheckResult } from '../types.js';

const OUTPUT_CAP = 4000;

export type CheckSandboxSettings = Omit<DockerSandboxOptions, 'docker' | 'runId' | 'workspace' | 'maxOutput' | 'warm'>;

/**
 * Run a case's checks after the agent finished: each in a fresh sandbox
 * container (default limits) with the case's final workspace mounted, its
 * output saved to `checks/<n>.txt`.
 */
export async function runChecks(
  docker: Docker,
  checks: string[],
  workspace: string,
  caseDir: string,
  settings: CheckSandboxSettings & { timeoutSeconds: number },
  signal?: AbortSignal,
): Promise<CheckResult[]> {
  if (checks.length === 0) return [];
  const { timeoutSeconds, ...spec } = settings;
  const sandbox = new DockerSandbox({ ...spec, docker, runId: newRunId(), workspace, maxOutput: OUTPUT_CAP, warm: false });
  const dir = join(caseDir, 'checks');
  mkdirSync(dir, { recursive: true });
  const results: CheckResult[] = [];
  try {
    for (const [i, command] of checks.entries()) {
      let result: CheckResult;
      try {
        if (signal?.aborted) break;
        const r = await sandbox.exec(command, { timeoutSeconds, signal });
        const output = [r.stdout, r.stderr].filter(Boolean).join(r.stdout.endsWith('\n') || !r.stdout ? '' : '\n');
        result = { command, exit_code: r.exitCode, passed: r.exitCode === 0 && !r.timedOut, output, duration_ms: r.durationMs, timed_out: r.timedOut };
      } catch (err) {
        result = { command, exit_code: -1, passed: false, output: `the check could not run: ${errorMessage(err)}`, duration_ms: 0, timed_out: false };
      }
      writeFileSync(join(dir, `${i + 1}.txt`), `$ ${command}\n${result.output}${result.output.endsWith('\n') || !result.output ? '' : '\n'}[exit ${result.exit_code}]\n`);
      results.push(result);
    }
  } finally {
    await sandbox.close();
  }
  return results;
}
