import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { collectSoon, trimSoon } from './collect';
import { MemoryConstants } from './constants';
import { OutputLog } from './output-log';

/**
 * One memory budget for what all sessions hold: their output logs and their headless screens. Memory
 * per session is bounded by configuration; this bounds the sum, so a hundred busy sessions cost what
 * the budget says, not a hundred times the largest one.
 *
 * Whatever the total, a screen nobody watches or used for UnusedScreenMs is dropped (it is most of a
 * session's memory and worth nothing until someone looks again: the next look rebuilds it), and a
 * session quiet for IdleLogMs keeps only MinHotTailBytes of its log in memory (the rest is read back
 * from disk by whoever asks for it, which for a quiet session is rare).
 *
 * Over budget, in this order (least recently active sessions first):
 *   1. screens nobody watches are dropped: the next look rebuilds them from the log's tail;
 *   2. cold log segments go to disk, each session keeping its newest HotTailBytes in memory: a replay
 *      or a slow client's backlog reads them back from there.
 *
 * What it lets go of is garbage until V8 collects it, so once a good part of the budget has been let
 * go of, a collection is started (collect.ts): otherwise the memory stays allocated for a long while.
 * And what V8 frees goes back to the C heap, which keeps it resident unless it is at the heap's top: so
 * once output is quiet, a moment after each collection the heap's free pages are given back (trimSoon),
 * and output that weighed on memory (a sixteenth of the budget or more) starts a collection of its own.
 *
 * While output flows, the segments it spills are kept for the logs' next appends, one check's worth
 * (MemoryConstants.SparesKeptQuietMs): fresh memory costs more than the bytes put in it.
 */
export interface BudgetedSession {
  readonly lastActiveAt: number;
  /** Memory of its log (resident segments). */
  readonly logResidentBytes: number;
  /** Memory of its headless screen (0 without one). */
  readonly screenBytes: number;
  /** Drops the screen if nobody watches it and it was not used for `unusedForMs`; returns the bytes freed. */
  dropScreen(unusedForMs?: number): number;
  /** Moves cold log segments to disk until `wanted` bytes are freed (keeping the hot tail); returns the bytes freed. */
  spillLog(keepBytes: number, wanted: number, dir: string | null): number;
  /** Resolves once the spill writes started so far have landed: their memory is garbage from then on. */
  spillsLanded(): Promise<void>;
}

/** How the budget makes freed memory really free: a V8 collection, then the C heap's free pages given back. */
export interface HeapRelease {
  collect(): void;
  trim(): void;
}

const ProcessHeap: HeapRelease = { collect: () => void collectSoon(), trim: () => void trimSoon() };

/**
 * How long after output stops the budget has done all it will for a quiet server: the idle sessions'
 * logs spilled to their hot tails (IdleLogMs), a collection, and the heap trimmed after it, give or take
 * one check either way.
 */
export const SettledAfterOutputMs = MemoryConstants.IdleLogMs + MemoryConstants.TrimAfterCollectMs + 2 * MemoryConstants.CheckMs;

export class MemoryBudget {
  private grown = 0;
  private scheduled = false;
  private readonly timer: NodeJS.Timeout;
  /** Let go of since the last collection was started, and when that was. */
  private freedSinceCollect = 0;
  private collectedAt = 0;
  /** When a log last grew, and whether spare segments for one check's growth are kept meanwhile. */
  private grewAt = 0;
  private sparesKept = false;
  /** Output appended since the heap was last trimmed, and when it is to be trimmed next (a collection was started for it). */
  private grownSinceTrim = 0;
  private trimAt: number | null = null;

  constructor(
    /** Settable: the PTY host takes the budget of the server that spawns in it. */
    public limitBytes: number,
    private readonly sessions: () => BudgetedSession[],
    /** Where spilled segments go (a private directory); null: the system's temporary directory. */
    private readonly spillDir: string | null,
    /**
     * While output flows, at most one collection per this long; null: none until output is quiet. A
     * collection is one pause of the event loop in proportion to the heap (collect.ts): worth it while
     * output flows only where the heap is small (the PTY host).
     */
    private readonly collectWhileFlowingEveryMs: number | null = null,
    private readonly heap: HeapRelease = ProcessHeap,
  ) {
    this.timer = setInterval(() => this.enforce(), MemoryConstants.CheckMs);
    this.timer.unref();
  }

  /** Output was appended: a large enough growth checks the budget without waiting for the timer. */
  noteGrowth(bytes: number): void {
    this.grown += bytes;
    this.grownSinceTrim += bytes;
    this.grewAt = Date.now();
    if (!this.sparesKept) {
      this.sparesKept = true;
      OutputLog.keepSpareBytes(this.limitBytes / MemoryConstants.GrowthChecksPerBudget);
    }
    if (this.scheduled || this.grown < this.limitBytes / MemoryConstants.GrowthChecksPerBudget) return;
    this.scheduled = true;
    setImmediate(() => this.enforce());
  }

  /** Total memory held now, and what enforcing freed. */
  enforce(): { heldBytes: number; freedBytes: number } {
    this.scheduled = false;
    this.grown = 0;
    const all = this.sessions();
    let held = 0;
    let dropped = 0;
    const quietSince = Date.now() - MemoryConstants.IdleLogMs;
    for (const s of all) {
      dropped += s.dropScreen(MemoryConstants.UnusedScreenMs);
      if (s.lastActiveAt < quietSince) dropped += s.spillLog(MemoryConstants.MinHotTailBytes, Infinity, this.spillDir);
      held += s.logResidentBytes + s.screenBytes;
    }
    const before = held + dropped;
    if (held > this.limitBytes) {
      const byAge = [...all].sort((a, b) => a.lastActiveAt - b.lastActiveAt);
      for (const s of byAge) {
        if (held <= this.limitBytes) break;
        held -= s.dropScreen();
      }
      // Hot tails must fit too: with many sessions each keeps less (half the budget shared out).
      const keep = Math.max(MemoryConstants.MinHotTailBytes, Math.min(MemoryConstants.HotTailBytes, Math.floor(this.limitBytes / (2 * all.length))));
      for (const s of byAge) {
        if (held <= this.limitBytes) break;
        held -= s.spillLog(keep, held - this.limitBytes, this.spillDir);
      }
    }
    const now = Date.now();
    const quiet = now - this.grewAt >= MemoryConstants.SparesKeptQuietMs;
    let sparesFreed = 0;
    if (this.sparesKept && quiet) {
      this.sparesKept = false;
      sparesFreed = OutputLog.keepSpareBytes(0);
    }
    this.freedSinceCollect += before - held + sparesFreed;
    const collectEveryMs = quiet ? MemoryConstants.CollectEveryMs : this.collectWhileFlowingEveryMs;
    if (collectEveryMs !== null && this.freedSinceCollect >= this.limitBytes / MemoryConstants.CollectAfterFreeing && now - this.collectedAt >= collectEveryMs) this.collect(all, now);
    this.releaseAfterOutput(all, now, quiet);
    return { heldBytes: held, freedBytes: before - held };
  }

  /**
   * The C heap keeps what V8 frees resident unless it is at the heap's top, so the last collection is
   * followed, once output is quiet and the collection has had time to finish, by the heap's free pages
   * given back. Output that weighed on memory (a sixteenth of the budget) since the last collection starts
   * one of its own once quiet.
   * Never while output flows: pages given back then would be faulted in again at once.
   */
  private releaseAfterOutput(all: BudgetedSession[], now: number, quiet: boolean): void {
    if (!quiet) return;
    const grewSinceCollect = this.grewAt > this.collectedAt;
    if (grewSinceCollect && this.grownSinceTrim >= this.limitBytes / MemoryConstants.GrowthChecksPerBudget) this.collect(all, now);
    if (this.trimAt === null || now < this.trimAt) return;
    this.trimAt = null;
    this.grownSinceTrim = 0;
    this.heap.trim();
  }

  private collect(all: BudgetedSession[], now: number): void {
    this.freedSinceCollect = 0;
    this.collectedAt = now;
    this.trimAt = now + MemoryConstants.TrimAfterCollectMs;
    // Spilled segments are let go of as their writes land (on libuv's threads): collect once they have.
    void Promise.all(all.map((s) => s.spillsLanded())).then(() => this.heap.collect());
  }

  dispose(): void {
    clearInterval(this.timer);
    if (this.sparesKept) OutputLog.keepSpareBytes(0);
    this.sparesKept = false;
  }
}

/** Spilled output goes under the state directory (private to the user), else the system's temporary one. */
export function spillDirIn(stateDir: string | null): string | null {
  if (!stateDir) return null;
  const dir = join(stateDir, 'spill');
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  } catch {
    return null;
  }
}

