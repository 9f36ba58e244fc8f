/**
 * Everything the bench starts (servers, shells, temp dirs, browsers) registers its undo here, so that
 * a failed case, an exception or Ctrl-C never leaves a process or a directory behind.
 */
type Undo = { async: () => Promise<void> | void; sync?: () => void };

const pending = new Set<Undo>();
let aborting = false;

/** Ctrl-C or SIGTERM: from now on nothing new may start (a case still running would start servers). */
export function abort(): void {
  aborting = true;
}

/** Registers an undo; the returned function runs it now (once) and forgets it. */
export function onCleanup(undo: () => Promise<void> | void, syncFallback?: () => void): () => Promise<void> {
  if (aborting) {
    // Too late to start anything: undo at once, and stop the caller.
    void Promise.resolve().then(undo);
    throw new Error('the bench is being interrupted');
  }
  const entry: Undo = { async: undo, sync: syncFallback };
  pending.add(entry);
  return async () => {
    if (!pending.delete(entry)) return;
    await entry.async();
  };
}

/** Runs every undo still pending, newest first, until none is left; errors are reported, never thrown. */
export async function cleanupAll(): Promise<void> {
  while (pending.size) {
    for (const entry of [...pending].reverse()) {
      pending.delete(entry);
      try {
        await entry.async();
      } catch (err) {
        console.error('bench: cleanup failed:', err);
      }
    }
  }
}

/** For process 'exit', where nothing asynchronous runs any more: kill what can be killed synchronously. */
export function cleanupAllSync(): void {
  for (const entry of [...pending].reverse()) {
    try {
      entry.sync?.();
    } catch {
      // keep going: the rest must still die
    }
  }
  pending.clear();
}
