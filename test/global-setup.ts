import { collectLeftovers, describeLeftovers, endRunTempDir, ensureRunMarker, selfAndAncestors, useRunTempDir, type MarkedProcess } from './leftovers';

/**
 * vitest's global setup: marks the run (see leftovers.ts), and afterwards fails the run when a process
 * it started is still alive. vitest calls the teardown before it stops its own workers, so those (our
 * children running vitest's worker script) are not leftovers; whatever they started is.
 */
export default function setup(): () => Promise<void> {
  const marker = ensureRunMarker();
  useRunTempDir();
  return async () => {
    const mine = selfAndAncestors();
    const isVitestWorker = (p: MarkedProcess) => p.ppid === process.pid && /node_modules\/vitest\//.test(p.cmdline);
    const left = await collectLeftovers(marker, (p) => mine.has(p.pid) || isVitestWorker(p));
    const files = endRunTempDir('vitest');
    if (files) console.error(`\n${files}\n`);
    if (!left.length) return;
    console.error(`\n${describeLeftovers(left, 'vitest')}\n`);
    // An error thrown here is only logged by vitest; the exit status is what fails the run.
    process.exitCode = 1;
  };
}
