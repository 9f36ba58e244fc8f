import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { trimHeap } from 'ptydeck-heap-trim';

/**
 * Asks V8 for a full collection, so that buffers the memory budget let go of are really given back to
 * the allocator. It runs from a task just after the current one (gc()'s 'async' execution defers it,
 * and nothing more: it is one atomic mark-compact, a pause in proportion to the heap), so callers keep
 * it off busy moments (memory-budget.ts).
 *
 * Why it is needed: a spilled log segment or a dropped screen is garbage, and its memory is freed only
 * when V8 collects it. V8 collects when its own heap fills, or once memory outside it (buffers) has
 * grown by 64 MiB since the last collection. So a process that spilled 100 MiB and then went quiet
 * kept all of it, and one under a flood held tens of MiB of dead segments beyond its budget. Measured
 * (test/memory-rss.test.ts: 16 MiB budget, 16 sessions printing 6 MiB each at once): the PTY host's
 * RSS peaked ~120 MiB above its idle size without these collections, ~80 MiB with them.
 *
 * `gc` is the function `--expose-gc` installs; a process started without that flag gets it the way V8
 * offers after start-up: the flag applies to contexts made from then on, and a new context has it.
 * Null where neither works (the budget then relies on V8's own collections).
 */
type GcFunction = (opts?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => void;

let gc: GcFunction | null | undefined;

function gcFunction(): GcFunction | null {
  if (gc !== undefined) return gc;
  const exposed = (globalThis as { gc?: GcFunction }).gc;
  if (typeof exposed === 'function') return (gc = exposed);
  try {
    setFlagsFromString('--expose-gc');
    const made = runInNewContext('gc') as unknown;
    gc = typeof made === 'function' ? (made as GcFunction) : null;
  } catch {
    gc = null;
  }
  return gc;
}

/** Asks for a full collection from a task of its own, without waiting for it; false when this runtime offers no way to. */
export function collectSoon(): boolean {
  return collect('async');
}

/** A full collection, finished before this returns (the bench, between measured runs); false when this runtime offers no way to. */
export function collectNow(): boolean {
  return collect('sync');
}

function collect(execution: 'sync' | 'async'): boolean {
  const f = gcFunction();
  if (!f) return false;
  try {
    f({ type: 'major', execution });
    return true;
  } catch {
    return false;
  }
}

/**
 * Gives the C heap's whole free pages back to the system (glibc's malloc_trim, on a libuv thread:
 * native/heap-trim). A collection frees the buffers it finds dead, but glibc returns freed memory only
 * from the top of its heap: after a burst of output the heap's middle is mostly free and still resident.
 * Measured (bench scale case: 50 sessions printing 8 MiB each at once): the server's heap was 287 MiB
 * after the bursts, 46 MiB of it live; trimmed, the process went from 373 to 135 MiB.
 * `done` is called once the pages are given back (with whether any were). False where this build or
 * this C library cannot (the heap then stays at its peak, as before).
 */
export function trimSoon(done: (released: boolean) => void = () => undefined): boolean {
  if (!trimHeap) return false;
  try {
    trimHeap(done);
    return true;
  } catch {
    return false;
  }
}
