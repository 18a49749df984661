import { describe, expect, it } from 'vitest';
import { OutputCollector, renderBoth } from '../../src/sandbox/output-collector.js';

const seq = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${from + i}\n`).join('');

function feed(collector: OutputCollector, text: string | Buffer, chunk = 4096) {
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text);
  for (let i = 0; i < buf.length; i += chunk) collector.push(buf.subarray(i, i + chunk));
}

describe('OutputCollector', () => {
  it('keeps small output whole', () => {
    const c = new OutputCollector(100);
    feed(c, 'hello\nworld\n', 3);
    expect(c.render(100)).toEqual({ text: 'hello\nworld\n', truncated: false });
    expect(c.lines).toBe(2);
  });

  it('keeps head and tail with a marker counting what was left out', () => {
    const c = new OutputCollector(1000);
    const all = seq(1, 100_000);
    feed(c, all, 777);
    const { text, truncated } = c.render(1000);
    expect(truncated).toBe(true);
    expect(text.startsWith('1\n2\n3\n')).toBe(true);
    expect(text.endsWith('99999\n100000\n')).toBe(true);
    const marker = text.split('\n').find((l) => l.startsWith('[...'))!;
    expect(marker).toMatch(/^\[\.\.\. \d+ characters and \d+ lines elided; the output was 588895 characters, 100000 lines \.\.\.\]$/);
    const elided = Number(/(\d+) characters/.exec(marker)![1]);
    expect(elided).toBe(all.length - 1000);
    expect(text.length - marker.length - 2).toBe(1000);
  });

  it('holds at most about twice the cap in memory whatever goes by', () => {
    const c = new OutputCollector(1000);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    for (let i = 0; i < 1600; i++) c.push(chunk); // 100 MiB
    expect(c.totalBytes).toBe(1600 * 64 * 1024);
    const retained = (c as unknown as { headBytes: number }).headBytes + (c as unknown as { ring: Buffer }).ring.length;
    expect(retained).toBeLessThanOrEqual(2000);
  });

  it('decodes invalid UTF-8 and NUL bytes without throwing', () => {
    const c = new OutputCollector(100);
    feed(c, Buffer.from([0x66, 0xff, 0xfe, 0x00, 0x6f, 0xc3]));
    const { text } = c.render(100);
    expect(text).toBe('f\uFFFD\uFFFD\u0000o\uFFFD');
  });

  it('a tail ring wrapping many times keeps the newest bytes in order', () => {
    const c = new OutputCollector(10);
    feed(c, 'abcdefghijklmnopqrstuvwxyz0123456789', 7);
    const { text } = c.render(10);
    expect(text.endsWith('56789')).toBe(true);
    expect(text.startsWith('abcde')).toBe(true);
  });
});

describe('renderBoth', () => {
  it('keeps the total within the budget plus marker lines', () => {
    const out = new OutputCollector(1000);
    const err = new OutputCollector(1000);
    feed(out, seq(1, 50_000));
    feed(err, 'warning: small\n');
    const r = renderBoth(out, err, 1000);
    expect(r.truncated).toBe(true);
    expect(r.stderr).toBe('warning: small\n');
    const withoutMarker = r.stdout.replace(/\n\[\.\.\..*\.\.\.\]\n/, '');
    expect(withoutMarker.length + r.stderr.length).toBeLessThanOrEqual(1000);
  });

  it('splits the budget when both streams are large', () => {
    const out = new OutputCollector(1000);
    const err = new OutputCollector(1000);
    feed(out, 'o'.repeat(50_000));
    feed(err, 'e'.repeat(50_000));
    const r = renderBoth(out, err, 1000);
    expect(r.stdout.replace(/\n\[.*\]\n/, '').length).toBe(500);
    expect(r.stderr.replace(/\n\[.*\]\n/, '').length).toBe(500);
  });
});
