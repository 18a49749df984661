import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** Every container and volume sandloop creates carries these labels. */
export const RUN_LABEL = 'sandloop.run';
export const PID_LABEL = 'sandloop.pid';
/** The owner's start time as the kernel counts it, to tell a live owner from a reused pid. */
export const PID_START_LABEL = 'sandloop.pid-start';
export const HOST_LABEL = 'sandloop.host';
export const STARTED_LABEL = 'sandloop.started';

/** Run ids sort by time and are unique enough to share one daemon: `20261129T190618-a1b2c3`. */
export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/** Field 22 of /proc/PID/stat: the process's start time in clock ticks since boot. Undefined off Linux. */
export function processStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

const ownStart = processStartTicks(process.pid) ?? '';

/** The labels of one run: its id plus the owning process, so a reaper can tell orphans. */
export function runLabels(runId: string): Record<string, string> {
  return {
    [RUN_LABEL]: runId,
    [PID_LABEL]: String(process.pid),
    [PID_START_LABEL]: ownStart,
    [HOST_LABEL]: hostname(),
    [STARTED_LABEL]: new Date(Date.now() - process.uptime() * 1000).toISOString(),
  };
}

/**
 * Is the process that labelled these still running? Only answerable for this
 * host; labels from another host count as alive (not ours to judge).
 */
export function ownerAlive(labels: Record<string, string>): boolean {
  if (labels[HOST_LABEL] !== hostname()) return true;
  const pid = Number(labels[PID_LABEL]);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = labels[PID_START_LABEL];
  const now = processStartTicks(pid);
  return !start || now === undefined || start === now;
}
