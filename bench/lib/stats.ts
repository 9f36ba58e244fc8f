/**
 * Order statistics for latencies and rates. Percentiles use the nearest-rank method: with 300 samples
 * p99 is the 297th smallest, a value that was actually observed rather than an interpolation.
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function max(values: readonly number[]): number {
  return values.length ? Math.max(...values) : Number.NaN;
}

/**
 * The ratio of ours to the baseline, taken round by round and then the median. Each round pairs a run
 * of ours with the baseline run made right beside it, so slow drift of a shared machine cancels.
 */
export function pairedRatio(ours: readonly number[], baseline: readonly number[]): number {
  const n = Math.min(ours.length, baseline.length);
  const ratios: number[] = [];
  for (let i = 0; i < n; i++) if (baseline[i] > 0 && Number.isFinite(ours[i])) ratios.push(ours[i] / baseline[i]);
  return median(ratios);
}

/** Milliseconds since an arbitrary origin, sub-microsecond resolution. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export const MiB = 1024 * 1024;
