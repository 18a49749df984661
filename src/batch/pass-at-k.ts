/** n choose k, as a float (n is small: repeats of one case). */
function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

/** pass@k: the chance that at least one of k attempts passes, estimated without bias from c passes in n (Chen et al. 2021). */
export function passAtK(n: number, c: number, k: number): number {
  if (n === 0 || k > n) return 0;
  return 1 - choose(n - c, k) / choose(n, k);
}

/** pass^k: the chance that all k attempts pass, estimated from c passes in n (tau-bench). */
export function passHatK(n: number, c: number, k: number): number {
  if (n === 0 || k > n) return 0;
  return choose(c, k) / choose(n, k);
}
