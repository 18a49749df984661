import { SandboxError } from '../errors.js';

/**
 * Reject with a clear error when a Docker operation does not settle in time, so
 * a stuck daemon becomes an error instead of a hung run.
 */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SandboxError(`${what} did not answer within ${Math.round(ms / 1000)} s`)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
