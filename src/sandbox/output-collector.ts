import { Writable } from 'node:stream';

/**
 * Captures one output stream with bounded memory: the first `capBytes` bytes
 * and a ring of the last `capBytes` bytes, plus counts of everything that went
 * by. It always accepts writes at once (never applies backpressure), so the
 * Docker attach stream keeps draining and the command never blocks on us.
 */
export class OutputCollector {
  private head: Buffer[] = [];
  private headBytes = 0;
  private readonly ring: Buffer;
  private ringEnd = 0;
  private ringFull = false;
  totalBytes = 0;
  totalChars = 0;
  totalLines = 0;
  private lastByte = -1;

  constructor(private readonly capBytes: number) {
    this.ring = Buffer.alloc(capBytes);
  }

  push(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    this.totalChars += countChars(chunk);
    this.totalLines += countNewlines(chunk);
    if (chunk.length > 0) this.lastByte = chunk[chunk.length - 1]!;
    if (this.headBytes < this.capBytes) {
      const take = chunk.subarray(0, this.capBytes - this.headBytes);
      this.head.push(Buffer.from(take));
      this.headBytes += take.length;
    }
    this.writeRing(chunk);
  }

  /** A Writable that feeds this collector; hand it to `demuxStream`. */
  writable(): Writable {
    return new Writable({
      highWaterMark: 1 << 20,
      write: (chunk: Buffer, _enc, done) => {
        this.push(chunk);
        done();
      },
    });
  }

  /** Lines, counting a last line without a newline. */
  get lines(): number {
    return this.totalLines + (this.totalBytes > 0 && this.lastByte !== 0x0a ? 1 : 0);
  }

  /**
   * The captured text cut to `budget` characters: head and tail with a marker
   * line between them saying what was left out. Invalid UTF-8 becomes U+FFFD.
   */
  render(budget: number): { text: string; truncated: boolean } {
    const headBuf = Buffer.concat(this.head);
    if (this.totalBytes <= this.capBytes) {
      const whole = headBuf.toString('utf8');
      if (whole.length <= budget) return { text: whole, truncated: false };
    }
    const half = Math.max(0, Math.floor(budget / 2));
    const head = headBuf.toString('utf8').slice(0, half);
    const tailText = this.tailBuffer().toString('utf8');
    const tail = half > 0 ? tailText.slice(-half) : '';
    const omittedChars = Math.max(0, this.totalChars - head.length - tail.length);
    const omittedLines = Math.max(0, this.lines - countLines(head) - countLines(tail));
    const marker = `\n[... ${omittedChars} characters and ${omittedLines} lines elided; the output was ${this.totalChars} characters, ${this.lines} lines ...]\n`;
    return { text: head + marker + tail, truncated: true };
  }

  private writeRing(chunk: Buffer): void {
    const cap = this.capBytes;
    if (cap === 0) return;
    if (chunk.length >= cap) {
      chunk.copy(this.ring, 0, chunk.length - cap);
      this.ringEnd = 0;
      this.ringFull = true;
      return;
    }
    const first = Math.min(chunk.length, cap - this.ringEnd);
    chunk.copy(this.ring, this.ringEnd, 0, first);
    if (first < chunk.length) {
      chunk.copy(this.ring, 0, first);
      this.ringFull = true;
    }
    const end = this.ringEnd + chunk.length;
    if (end >= cap) this.ringFull = true;
    this.ringEnd = end % cap;
  }

  private tailBuffer(): Buffer {
    if (!this.ringFull) return this.ring.subarray(0, this.ringEnd);
    return Buffer.concat([this.ring.subarray(this.ringEnd), this.ring.subarray(0, this.ringEnd)]);
  }
}

/**
 * Share `budget` characters between stdout and stderr: the smaller stream gets
 * what it needs up to half, the larger gets the rest.
 */
export function renderBoth(out: OutputCollector, err: OutputCollector, budget: number) {
  const a = out.totalChars;
  const b = err.totalChars;
  let outBudget = budget;
  let errBudget = budget;
  if (a + b > budget) {
    const half = Math.floor(budget / 2);
    if (a <= b) {
      outBudget = Math.min(a, half);
      errBudget = budget - outBudget;
    } else {
      errBudget = Math.min(b, half);
      outBudget = budget - errBudget;
    }
  }
  const stdout = out.render(outBudget);
  const stderr = err.render(errBudget);
  return { stdout: stdout.text, stderr: stderr.text, truncated: stdout.truncated || stderr.truncated };
}

/** UTF-8 characters: every byte that is not a continuation byte (invalid bytes count as one each). */
function countChars(buf: Buffer): number {
  let n = 0;
  for (let i = 0; i < buf.length; i++) if ((buf[i]! & 0xc0) !== 0x80) n++;
  return n;
}

function countNewlines(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, i + 1)) n++;
  return n;
}

function countLines(text: string): number {
  if (text === '') return 0;
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}
