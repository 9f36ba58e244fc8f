/**
 * A token bucket per key: `perMinute` in a burst, refilled evenly. Used to bound how fast one principal
 * can create sessions, so a runaway agent cannot fork the machine to death through us.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perMinute: number) {}

  /** Takes one token; returns the seconds to wait when there is none. */
  take(key: string, now = Date.now()): { ok: true } | { ok: false; retryAfterSecs: number } {
    const rate = this.perMinute / 60_000;
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    b.tokens = Math.min(this.perMinute, b.tokens + (now - b.at) * rate);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSecs: Math.ceil((1 - b.tokens) / rate / 1000) };
  }
}
