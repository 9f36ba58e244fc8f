import type { RemoteState } from '../../shared/types';

/**
 * Whether a remote answers, and when to try again. Retries back off exponentially with jitter (many
 * tabs and remotes never retry in lockstep); a refused token backs off from a longer first delay,
 * since it will not fix itself in a second, but is still retried, in case it is fixed on the remote.
 */
export const RetryPolicy = {
  FirstDelayMs: 1000,
  MaxDelayMs: 30_000,
  UnauthorizedFirstDelayMs: 10_000,
  /** ±25%: spreads the retries of many sockets over time. */
  Jitter: 0.25,
} as const;

export class RemoteLink {
  state: RemoteState = 'connecting';
  reason: string | null = null;
  since = new Date();
  retryAt: Date | null = null;
  private failures = 0;

  constructor(private readonly onChange: () => void) {}

  up(): void {
    this.failures = 0;
    this.retryAt = null;
    this.set('online', null);
  }

  /** Records a failure; returns how long to wait before the next attempt. */
  down(reason: string, unauthorized = false): number {
    this.failures += 1;
    const first = unauthorized ? RetryPolicy.UnauthorizedFirstDelayMs : RetryPolicy.FirstDelayMs;
    const delay = backoffDelay(first, this.failures);
    this.retryAt = new Date(Date.now() + delay);
    this.set(unauthorized ? 'unauthorized' : 'offline', reason);
    return delay;
  }

  private set(state: RemoteState, reason: string | null): void {
    if (state !== this.state) this.since = new Date();
    this.state = state;
    this.reason = reason;
    this.onChange();
  }
}

export function backoffDelay(firstMs: number, failures: number): number {
  const base = Math.min(RetryPolicy.MaxDelayMs, firstMs * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (1 - RetryPolicy.Jitter + Math.random() * 2 * RetryPolicy.Jitter));
}
