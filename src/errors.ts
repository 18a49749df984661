/**
 * Typed errors. The CLI maps each class to an exit code in one place
 * (cli/exit-codes.ts); nothing else decides exit codes.
 */

/** Bad flags, bad configuration, a missing key: caught before any container starts. Exit 2. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The Docker daemon could not be reached. Exit 3. */
export class DockerUnavailableError extends Error {
  override name = 'DockerUnavailableError';
  constructor(
    message: string,
    /** Each place that was tried, with why it failed. */
    readonly attempts: string[] = [],
  ) {
    super(message);
  }
}

/** The sandbox itself failed (not the command in it): create, start or the daemon broke. */
export class SandboxError extends Error {
  override name = 'SandboxError';
}

/** Building the sandbox image failed. */
export class ImageBuildError extends Error {
  override name = 'ImageBuildError';
}

/** `--apply` was refused: the task dir changed during the run. The changes stay in --out. Exit 1. */
export class ApplyRefusedError extends Error {
  override name = 'ApplyRefusedError';
}

/** The model API failed for good (after retries). `kind` is the API's error type. */
export class ModelError extends Error {
  override name = 'ModelError';
  constructor(
    message: string,
    readonly kind: string,
    readonly status?: number,
    /** Retrying cannot help (authentication, permission, bad request). */
    readonly permanent = false,
  ) {
    super(message);
  }
}

/** The run was cancelled (Ctrl-C, SIGTERM, or the caller's AbortSignal). */
export class AbortedError extends Error {
  override name = 'AbortedError';
  constructor(message = 'aborted') {
    super(message);
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
