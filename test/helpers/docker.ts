import { execFileSync } from 'node:child_process';
import { describe, inject } from 'vitest';

/** `describe` for tests that need a real Docker engine; skipped loudly off CI, never under CI=true (setup fails). */
export const describeDocker = (name: string, fn: () => void) =>
  inject('dockerMissing') ? describe.skip(`${name} (Docker unavailable)`, fn) : describe(name, fn);

/** Ids of containers (running or not) carrying the label, as `docker ps -a` shows them. */
export function sandloopContainers(runId?: string): string[] {
  const filter = runId ? `label=sandloop.run=${runId}` : 'label=sandloop.run';
  const out = execFileSync('docker', ['ps', '-aq', '--filter', filter], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}
