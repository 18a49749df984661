import { SandboxError } from '../errors.js';

let dockerMs = 30_000;

/** The deadline of every single Docker API request (`--docker-timeout`). */
export function setDockerTimeout(ms: number): void {
  dockerMs = ms;
}

export function dockerTimeoutMs(): number {
  return dockerMs;
}

/**
 * Reject with a clear error when an operation does not settle in time, so a
 * stuck daemon becomes an error instead of a hung run.
 */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    const secs = ms >= 10_000 ? Math.round(ms / 1000) : Math.round(ms / 100) / 10;
    timer = setTimeout(() => reject(new SandboxError(`${what} did not answer within ${secs} s`)), ms);
    timer.unref();
  });
  // A late rejection of the abandoned promise must not become an unhandled one.
  promise.catch(() => {});
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** `withDeadline` with the Docker API deadline. */
export function docker<T>(promise: Promise<T>, what: string): Promise<T> {
  return withDeadline(promise, dockerMs, what);
}
