// Types for scripts/test-report.mjs, which the tests import.
export interface Report {
  file: string;
  kind: 'vitest' | 'playwright';
}
export interface Failure {
  name: string;
  why: string[];
}
export function failures(report: Report, root: string): Failure[];
