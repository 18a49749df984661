import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Shared by every episode of a batch: when one call is told to back off
 * (429 with retry-after), every other call waits too, instead of each case
 * hammering the API on its own.
 */
export class RateGate {
  private until = 0;

  /** Hold calls for `ms` from now (never shortens a pause already in force). */
  pause(ms: number): void {
    this.until = Math.max(this.until, Date.now() + ms);
  }

  /** Resolves when no pause is in force. */
  async wait(signal?: AbortSignal): Promise<void> {
    for (let left = this.until - Date.now(); left > 0; left = this.until - Date.now()) {
      await sleep(left, undefined, { signal });
    }
  }
}
