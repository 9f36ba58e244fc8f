import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { MemoryConstants, OutputLogConstants } from './constants';
import { MemoryBudget, type HeapRelease } from './memory-budget';
import { OutputLog } from './output-log';

const Seg = OutputLogConstants.SegmentBytes;
const MiB = 1024 * 1024;
let dir: string;
let budget: MemoryBudget | null = null;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ptydeck-budget-test-'));
  OutputLog.dropSpareSegments();
  vi.useFakeTimers({ toFake: ['Date'] });
});
afterEach(() => {
  budget?.dispose();
  budget = null;
  vi.useRealTimers();
  OutputLog.keepSpareBytes(0);
  OutputLog.dropSpareSegments();
  rmSync(dir, { recursive: true, force: true });
});

function budgetOver(logs: OutputLog[], limitBytes: number, heap?: HeapRelease, collectWhileFlowingEveryMs: number | null = null): MemoryBudget {
  return new MemoryBudget(
    limitBytes,
    () =>
      logs.map((log) => ({
        lastActiveAt: Date.now(),
        logResidentBytes: log.residentBytes,
        screenBytes: 0,
        dropScreen: () => 0,
        spillLog: (keep: number, wanted: number, to: string | null) => log.spillCold(keep, wanted, to),
        spillsLanded: () => log.spillsLanded(),
      })),
    dir,
    collectWhileFlowingEveryMs,
    heap,
  );
}

/** Spill writes run on libuv's threads: their memory is let go of once they land. */
const landed = (logs: OutputLog[]): Promise<unknown> => Promise.all(logs.map((l) => l.spillsLanded()));

/** A heap release that only notes what the budget asked of it, in order. */
const noting = (calls: string[]): HeapRelease => ({ collect: () => void calls.push('collect'), trim: () => void calls.push('trim') });

/** Waits until the collection a check started (once the spill writes land) has been asked for. */
async function collectionsAsked(logs: OutputLog[]): Promise<void> {
  await landed(logs);
  await Promise.resolve();
}

/** Appends `segments` full segments to each log, through the budget as a session does. */
function grow(b: MemoryBudget, logs: OutputLog[], segments: number): void {
  const chunk = Buffer.alloc(Seg, 0x61);
  for (let i = 0; i < segments; i++)
    for (const log of logs) {
      log.append(chunk);
      b.noteGrowth(chunk.length);
    }
}

test('while output flows, what the budget spills is kept for the next appends; once it stops, the extra is let go of', async () => {
  const logs = Array.from({ length: 4 }, () => new OutputLog(16 * MiB));
  // A budget whose checks spill 3 MiB at a time, more than the 2 MiB kept when nothing flows; 56 MiB printed.
  const limit = 48 * MiB;
  budget = budgetOver(logs, limit);
  const perCheck = limit / MemoryConstants.GrowthChecksPerBudget;
  grow(budget, logs, 224);
  const { heldBytes, freedBytes } = budget.enforce();
  await landed(logs);
  expect(heldBytes).toBeLessThanOrEqual(limit);
  expect(freedBytes).toBeGreaterThan(OutputLogConstants.SpareSegments * Seg);
  // More than the resting 2 MiB waits for reuse, up to one check's worth.
  expect(OutputLog.spareSegments * Seg).toBeGreaterThan(OutputLogConstants.SpareSegments * Seg);
  expect(OutputLog.spareSegments * Seg).toBeLessThanOrEqual(perCheck);

  // Still flowing a moment later: kept.
  vi.setSystemTime(Date.now() + MemoryConstants.SparesKeptQuietMs / 2);
  budget.enforce();
  expect(OutputLog.spareSegments * Seg).toBeGreaterThan(OutputLogConstants.SpareSegments * Seg);

  // Quiet for long enough: back to the resting 2 MiB.
  vi.setSystemTime(Date.now() + MemoryConstants.SparesKeptQuietMs);
  budget.enforce();
  expect(OutputLog.spareSegments).toBe(OutputLogConstants.SpareSegments);
  // Every log still reads back every byte, spilled or not.
  for (const log of logs) expect(log.read(0).equals(Buffer.alloc(224 * Seg, 0x61))).toBe(true);
});

test('without a budget flowing, spilled segments beyond the resting 2 MiB are not kept', async () => {
  const log = new OutputLog(128 * Seg);
  const chunk = Buffer.alloc(Seg, 0x62);
  for (let i = 0; i < 96; i++) log.append(chunk);
  expect(log.spillCold(4 * Seg, Infinity, dir)).toBe(92 * Seg);
  await log.spillsLanded();
  expect(OutputLog.spareSegments).toBe(OutputLogConstants.SpareSegments);
});

test('once output that weighed on memory stops, a collection is started and the C heap trimmed after it; never while output flows', async () => {
  const logs = [new OutputLog(16 * MiB)];
  const calls: string[] = [];
  const limit = 16 * MiB;
  budget = budgetOver(logs, limit, noting(calls));
  const step = (ms: number): void => void vi.setSystemTime(Date.now() + ms);

  // A little output, then quiet: nothing worth releasing.
  grow(budget, logs, 1);
  step(MemoryConstants.SparesKeptQuietMs);
  budget.enforce();
  step(MemoryConstants.TrimAfterCollectMs);
  budget.enforce();
  await landed(logs);
  expect(calls).toEqual([]);

  // A sixteenth of the budget and more, still flowing: nothing yet.
  grow(budget, logs, limit / MemoryConstants.GrowthChecksPerBudget / Seg);
  budget.enforce();
  step(MemoryConstants.SparesKeptQuietMs / 2);
  budget.enforce();
  await landed(logs);
  expect(calls).toEqual([]);

  // Quiet: a collection; the trim waits until it has had time to finish, and comes once.
  step(MemoryConstants.SparesKeptQuietMs);
  budget.enforce();
  await collectionsAsked(logs);
  expect(calls).toEqual(['collect']);
  step(MemoryConstants.TrimAfterCollectMs / 2);
  budget.enforce();
  expect(calls).toEqual(['collect']);
  step(MemoryConstants.TrimAfterCollectMs);
  budget.enforce();
  step(MemoryConstants.TrimAfterCollectMs);
  budget.enforce();
  expect(calls).toEqual(['collect', 'trim']);

  // Output again before a due trim: the trim waits for quiet, and a fresh collection before it.
  grow(budget, logs, limit / MemoryConstants.GrowthChecksPerBudget / Seg);
  step(MemoryConstants.SparesKeptQuietMs);
  budget.enforce();
  await collectionsAsked(logs);
  step(MemoryConstants.TrimAfterCollectMs / 2);
  grow(budget, logs, 1);
  step(MemoryConstants.TrimAfterCollectMs / 2);
  budget.enforce();
  expect(calls).toEqual(['collect', 'trim', 'collect']);
  step(MemoryConstants.SparesKeptQuietMs);
  budget.enforce();
  await collectionsAsked(logs);
  expect(calls).toEqual(['collect', 'trim', 'collect', 'collect']);
  step(MemoryConstants.TrimAfterCollectMs);
  budget.enforce();
  expect(calls).toEqual(['collect', 'trim', 'collect', 'collect', 'trim']);
});

test('what the budget spills while output flows is collected then only where asked (the PTY host), else once output is quiet', async () => {
  for (const whileFlowing of [null, 250]) {
    const logs = Array.from({ length: 4 }, () => new OutputLog(16 * MiB));
    const calls: string[] = [];
    const limit = 16 * MiB;
    budget = budgetOver(logs, limit, noting(calls), whileFlowing);
    // Twice the budget printed, checked as it flows: the budget spills far more than an eighth of itself.
    for (let round = 0; round < 4; round++) {
      grow(budget, logs, 32);
      vi.setSystemTime(Date.now() + 300);
      expect(budget.enforce().heldBytes).toBeLessThanOrEqual(limit);
      await collectionsAsked(logs);
    }
    // The last two checks spilled: the host collects after each, the server after neither.
    expect(calls, `collections while flowing (${whileFlowing})`).toEqual(whileFlowing === null ? [] : ['collect', 'collect']);
    // Quiet: one collection (the server's first), then the trim.
    vi.setSystemTime(Date.now() + MemoryConstants.SparesKeptQuietMs);
    budget.enforce();
    await collectionsAsked(logs);
    vi.setSystemTime(Date.now() + MemoryConstants.TrimAfterCollectMs);
    budget.enforce();
    expect(calls.slice(-2)).toEqual(['collect', 'trim']);
    budget.dispose();
    budget = null;
    OutputLog.keepSpareBytes(0);
    OutputLog.dropSpareSegments();
  }
});
