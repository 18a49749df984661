import { closeSync, openSync, writeSync } from 'node:fs';
import { ConfigError, errorMessage } from '../errors.js';
import type { RunEvent } from '../types.js';

/**
 * Appends events as JSONL, one synchronous write per event, so that a crash
 * loses nothing that already happened.
 */
export class TranscriptWriter {
  private fd: number | undefined;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'a');
  }

  /** Open for appending, or a ConfigError naming the path. */
  static open(path: string): TranscriptWriter {
    try {
      return new TranscriptWriter(path);
    } catch (err) {
      throw new ConfigError(`--transcript ${path}: ${errorMessage(err)}`);
    }
  }

  write(event: RunEvent): void {
    if (this.fd !== undefined) writeSync(this.fd, `${JSON.stringify(event)}\n`);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
