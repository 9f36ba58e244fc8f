import { collectLeftovers, describeLeftovers, ensureRunMarker, selfAndAncestors, type MarkedProcess } from '../test/leftovers';

/**
 * Playwright's global setup: the run's marker (also set by playwright.config.ts, so the workers inherit
 * it), and a teardown that fails the run when a process it started (a server, a shell, a browser) is
 * still alive at the end (test/leftovers.ts).
 */
export default function globalSetup(): () => Promise<void> {
  const marker = ensureRunMarker();
  return async () => {
    const mine = selfAndAncestors();
    const isPlaywrightWorker = (p: MarkedProcess) => p.ppid === process.pid && /node_modules\/(@playwright|playwright)(-core)?\//.test(p.cmdline);
    const left = await collectLeftovers(marker, (p) => mine.has(p.pid) || isPlaywrightWorker(p));
    if (left.length) throw new Error(describeLeftovers(left, 'playwright'));
  };
}
