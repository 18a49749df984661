import type Docker from 'dockerode';
import { expect, it } from 'vitest';
import { limitDockerRequests } from '../../src/sandbox/docker-client.js';

it('caps short Docker requests in flight, and lets long-lived ones through', async () => {
  let active = 0;
  let peak = 0;
  const modem = {
    dial: (options: { path: string }, callback: (err: null, data: string) => void) => {
      active++;
      peak = Math.max(peak, active);
      // wait/attach never end in this test; the short ones take 20 ms.
      if (/\/wait|\/attach/.test(options.path)) return;
      setTimeout(() => {
        active--;
        callback(null, options.path);
      }, 20);
    },
  };
  const docker = { modem } as unknown as Docker;
  limitDockerRequests(docker, 3);
  const dial = (path: string) => new Promise((resolve) => (docker.modem as unknown as typeof modem).dial({ path }, (_e, d) => resolve(d)));
  for (let i = 0; i < 5; i++) void dial(`/containers/c${i}/wait?`);
  const short = await Promise.all(Array.from({ length: 10 }, (_, i) => dial(`/containers/create?name=${i}`)));
  expect(short).toHaveLength(10);
  // 5 long-lived requests were never queued; at most 3 short ones ran beside them.
  expect(peak).toBe(5 + 3);
});
