import type Docker from 'dockerode';
import { expect, it } from 'vitest';
import { WarmPool } from '../../src/sandbox/warm-pool.js';

/** A Docker client whose creates fail after `okCreates` successes; nothing else is needed before start. */
function flakyDocker(failFrom: number): Docker {
  let creates = 0;
  return {
    createContainer: async () => {
      creates++;
      if (creates >= failFrom) throw new Error('daemon busy');
      return { id: `c${creates}`, start: async () => {}, wait: () => new Promise(() => {}) };
    },
    getContainer: () => ({ remove: async () => {} }),
  } as unknown as Docker;
}

const spec = { runId: 'r', image: 'i', workspace: '/tmp', memoryBytes: 1 << 30, cpus: 1, pids: 10 };

it('a take never hangs when preparations fail while others still run', async () => {
  const pool = new WarmPool({ docker: flakyDocker(2), spec, minReady: 2, maxReady: 3 });
  const takes = await Promise.race([
    Promise.all([pool.take(), pool.take(), pool.take()]),
    new Promise<'hung'>((r) => setTimeout(() => r('hung'), 3000)),
  ]);
  expect(takes).not.toBe('hung');
  expect((takes as unknown[]).filter(Boolean).length).toBeLessThanOrEqual(1);
  await pool.close();
});

it('an abort releases a waiting take', async () => {
  const never = { createContainer: () => new Promise(() => {}), getContainer: () => ({ remove: async () => {} }) } as unknown as Docker;
  const pool = new WarmPool({ docker: never, spec });
  const controller = new AbortController();
  const pending = pool.take(controller.signal);
  controller.abort();
  await expect(pending).resolves.toBeUndefined();
});

it('keeps two ready, and more after several calls in one turn', async () => {
  let creates = 0;
  const docker = {
    createContainer: async () => ({ id: `c${++creates}`, start: async () => {}, wait: () => new Promise(() => {}) }),
    getContainer: () => ({ remove: async () => {} }),
  } as unknown as Docker;
  const pool = new WarmPool({ docker, spec, minReady: 2, maxReady: 4 });
  pool.warm();
  await new Promise((r) => setTimeout(r, 100));
  expect(creates).toBe(2);
  // Three calls in one turn: demand is three, plus one ahead.
  await Promise.all([pool.take(), pool.take(), pool.take()]);
  await new Promise((r) => setTimeout(r, 100));
  expect(creates - 3).toBe(4);
  await pool.close();
});
