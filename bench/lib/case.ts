import type { Row } from './table';

/** What every case gets, and what it gives back. */
export interface CaseContext {
  quick: boolean;
  /** A temp dir for this run (payload files); removed at the end. */
  workDir: string;
  log(message: string): void;
}

export interface CaseOutcome {
  rows: Row[];
  /** Facts worth a line in docs/PERFORMANCE.md (what failed and why, what a door reported). */
  notes: string[];
}

export interface BenchCase {
  id: string;
  title: string;
  run(ctx: CaseContext): Promise<CaseOutcome>;
}

/**
 * Runs the baseline and ours side by side, `rounds` times, alternating which goes first (ABBA), so a
 * machine that drifts slower or faster during the run weighs on both equally.
 */
export async function pairedRounds<T>(rounds: number, baseline: (round: number) => Promise<T>, ours: (round: number) => Promise<T>): Promise<{ baseline: T[]; ours: T[] }> {
  const out = { baseline: [] as T[], ours: [] as T[] };
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      out.baseline.push(await baseline(r));
      out.ours.push(await ours(r));
    } else {
      out.ours.push(await ours(r));
      out.baseline.push(await baseline(r));
    }
  }
  return out;
}
