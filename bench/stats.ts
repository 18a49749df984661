/** Median and p95 of a sample, in the sample's unit. */
export function summarize(samples: number[]): { median: number; p95: number; n: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1) + 0.5))]!;
  return { median: at(0.5), p95: at(0.95), n: sorted.length };
}

export const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
export const ratio = (a: number, b: number) => `${(a / b).toFixed(3)}×`;

/** Time `n` runs of `fn`, pausing `pauseMs` between them (not timed). Returns ms per run. */
export async function timeRuns(n: number, fn: () => Promise<unknown>, pauseMs = 0): Promise<number[]> {
  const out: number[] = [];
  await fn(); // warm-up, not counted
  for (let i = 0; i < n; i++) {
    if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
    const t = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}
