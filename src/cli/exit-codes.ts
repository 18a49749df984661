import { ConfigError, DockerUnavailableError, ImageBuildError } from '../errors.js';
import type { RunResult } from '../types.js';

/** Every exit code sandloop uses. The README's table lists the same. */
export const EXIT = {
  completed: 0,
  failed: 1,
  usage: 2,
  docker: 3,
  image: 4,
  aborted: 130,
} as const;

/** Errors raised before a run starts. Anything unexpected is a failure (1). */
export function exitCodeForError(err: unknown): number {
  if (err instanceof ConfigError) return EXIT.usage;
  if (err instanceof DockerUnavailableError) return EXIT.docker;
  if (err instanceof ImageBuildError) return EXIT.image;
  return EXIT.failed;
}

const NOT_RETRYABLE_CONFIG = new Set(['authentication_error', 'permission_error']);

export function exitCodeForResult(result: Pick<RunResult, 'status' | 'error_type'>): number {
  switch (result.status) {
    case 'completed':
      return EXIT.completed;
    case 'aborted':
      return EXIT.aborted;
    case 'error':
      // A rejected key is a configuration problem, not a task failure.
      return result.error_type && NOT_RETRYABLE_CONFIG.has(result.error_type) ? EXIT.usage : EXIT.failed;
    default:
      return EXIT.failed;
  }
}
