import { randomBytes } from 'node:crypto';

/** Every container and volume sandloop creates carries these labels. */
export const RUN_LABEL = 'sandloop.run';
export const PID_LABEL = 'sandloop.pid';
export const STARTED_LABEL = 'sandloop.started';

/** Run ids sort by time and are unique enough to share one daemon: `20261129T190618-a1b2c3`. */
export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/** The labels of one run: its id plus the owning process, so a reaper can tell orphans. */
export function runLabels(runId: string): Record<string, string> {
  return {
    [RUN_LABEL]: runId,
    [PID_LABEL]: String(process.pid),
    [STARTED_LABEL]: String(Math.round(Date.now() - process.uptime() * 1000)),
  };
}
