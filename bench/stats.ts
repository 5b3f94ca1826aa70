/** Summaries of timing samples. */

/** Median and 99th percentile of a set of samples, in the samples' unit. */
export interface Summary {
  median: number;
  p99: number;
  n: number;
}

/** The nearest-rank percentile `p` (0..100) of `samples`. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(samples: readonly number[]): Summary {
  return { median: percentile(samples, 50), p99: percentile(samples, 99), n: samples.length };
}

/** `value` rounded to `digits` decimals, for printing and for the JSON line. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
