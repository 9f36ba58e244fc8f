import { pairedRatio, percentile } from './stats';

/**
 * One row per figure. Cells are text: a case that fails an integrity check says so in the `ours`
 * cell ("FAILED: lost bytes ...") instead of printing a number that would look valid.
 */
export interface Row {
  case: string;
  figure: string;
  ours: string;
  baseline: string;
  /** ours ÷ baseline (see docs/PERFORMANCE.md for which way is better, per figure). */
  ratio: string;
}

export function markdownTable(rows: readonly Row[], machine: string): string {
  const header = ['case', 'figure', 'ours', 'baseline', 'ratio', 'machine'];
  const body = rows.map((r) => [r.case, r.figure, r.ours, r.baseline, r.ratio, machine].map(escapeCell));
  const lines = [
    `| ${header.join(' | ')} |`,
    `| ${['---', '---', '---:', '---:', '---:', '---'].join(' | ')} |`,
    ...body.map((cells) => `| ${cells.join(' | ')} |`),
  ];
  return lines.join('\n');
}

const escapeCell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

const num = (v: number, digits: number): string => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

/** Three significant digits, enough to compare and no more than the noise allows. */
function sig3(v: number): string {
  if (!Number.isFinite(v)) return 'n/a';
  const a = Math.abs(v);
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toFixed(3);
}

export const fmtMiBs = (v: number): string => `${sig3(v)} MiB/s`;
export const fmtMs = (v: number): string => `${sig3(v)} ms`;
export const fmtMiB = (v: number): string => `${sig3(v)} MiB`;
export const fmtKiB = (v: number): string => `${sig3(v)} KiB`;
export const fmtRatio = (v: number): string => (Number.isFinite(v) ? `${sig3(v)}×` : 'n/a');
export const fmtCount = (v: number): string => num(v, 0);

/**
 * p50 and p99 rows for a latency measured in rounds: each cell is the percentile over every sample;
 * the ratio compares that percentile round by round (see report.ts).
 */
export function latencyRows(caseName: string, what: string, res: { ours: number[][]; baseline: number[][] }): Row[] {
  return ([50, 99] as const).map((p) => ({
    case: caseName,
    figure: `${what}: p${p}`,
    ours: fmtMs(percentile(res.ours.flat(), p)),
    baseline: fmtMs(percentile(res.baseline.flat(), p)),
    ratio: fmtRatio(
      pairedRatio(
        res.ours.map((r) => percentile(r, p)),
        res.baseline.map((r) => percentile(r, p)),
      ),
    ),
  }));
}
