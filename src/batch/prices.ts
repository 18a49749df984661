import { readFileSync } from 'node:fs';
import { ConfigError, errorMessage } from '../errors.js';
import type { Usage } from '../types.js';

/** USD per million tokens. */
export interface Price {
  input: number;
  output: number;
  cache_write: number;
  cache_read: number;
}

/**
 * List prices in USD per million tokens, matched by model-id prefix (longest
 * prefix wins). Estimates only: check your contract. Override or extend with
 * `--prices FILE`, a JSON object of the same shape.
 */
export const DEFAULT_PRICES: Record<string, Price> = {
  'claude-opus-4': { input: 15, output: 75, cache_write: 18.75, cache_read: 1.5 },
  'claude-opus-4-5': { input: 5, output: 25, cache_write: 6.25, cache_read: 0.5 },
  'claude-sonnet-4': { input: 3, output: 15, cache_write: 3.75, cache_read: 0.3 },
  'claude-haiku-4': { input: 1, output: 5, cache_write: 1.25, cache_read: 0.1 },
  'claude-3-5-haiku': { input: 0.8, output: 4, cache_write: 1, cache_read: 0.08 },
  /** Scripted and replayed models cost nothing. */
  'scripted:': { input: 0, output: 0, cache_write: 0, cache_read: 0 },
  'replay:': { input: 0, output: 0, cache_write: 0, cache_read: 0 },
};

export type PriceTable = Record<string, Price>;

export function loadPrices(file?: string): PriceTable {
  if (!file) return DEFAULT_PRICES;
  let extra: unknown;
  try {
    extra = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`--prices ${file}: ${errorMessage(err)}`);
  }
  if (typeof extra !== 'object' || extra === null) throw new ConfigError(`--prices ${file}: expected an object of model prefix -> {input, output, cache_write, cache_read}`);
  for (const [model, p] of Object.entries(extra)) {
    for (const key of ['input', 'output', 'cache_write', 'cache_read'] as const) {
      if (typeof (p as Record<string, unknown>)?.[key] !== 'number') throw new ConfigError(`--prices ${file}: ${model}.${key} must be a number (USD per million tokens)`);
    }
  }
  return { ...DEFAULT_PRICES, ...(extra as PriceTable) };
}

/** Estimated cost in USD; a model with no matching price costs 0 (and is reported as unpriced by the caller). */
export function costOf(model: string, usage: Usage, table: PriceTable): number {
  const price = priceFor(model, table);
  if (!price) return 0;
  return (
    (usage.input_tokens * price.input +
      usage.output_tokens * price.output +
      usage.cache_creation_input_tokens * price.cache_write +
      usage.cache_read_input_tokens * price.cache_read) /
    1_000_000
  );
}

export function priceFor(model: string, table: PriceTable): Price | undefined {
  const key = Object.keys(table)
    .filter((prefix) => model.startsWith(prefix))
    .sort((a, b) => b.length - a.length)[0];
  return key ? table[key] : undefined;
}
