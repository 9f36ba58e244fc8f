/**
 * Promises that settle once a condition holds. The condition is looked at again whenever the owner
 * calls `wake()` (something it depends on changed), and once more at the deadline.
 */
export class Waiters {
  private readonly checks = new Set<() => void>();

  /** Resolves true when `done()` holds, false after `ms` (Infinity waits for ever). */
  until(done: () => boolean, ms: number): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      const check = (): void => {
        if (!done()) return;
        if (timer) clearTimeout(timer);
        this.checks.delete(check);
        resolve(true);
      };
      this.checks.add(check);
      if (Number.isFinite(ms)) {
        timer = setTimeout(() => {
          this.checks.delete(check);
          resolve(done());
        }, Math.max(0, ms));
      }
    });
  }

  wake(): void {
    for (const check of [...this.checks]) check();
  }
}
