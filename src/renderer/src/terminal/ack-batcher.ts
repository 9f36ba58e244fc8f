import { ViewerFlowControl } from '../../../shared/types';

/**
 * Flow control for the view socket. The server sends at most HighWatermarkBytes beyond what we have
 * acknowledged, so every parsed byte must be acked or the view freezes. Acks are batched: one per
 * AckEveryBytes, and a timer flushes a small remainder so a trickle of output never stalls.
 *
 * A snapshot starts the server's count afresh; writes queued before it belong to an old epoch and are
 * not counted when xterm gets round to parsing them.
 */
export const AckTiming = {
  /** Flush a remainder below AckEveryBytes after this long. */
  FlushAfterMs: 50,
} as const;

export class AckBatcher {
  private unacked = 0;
  private epoch = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly sendAck: (bytes: number) => void) {}

  /** The callback to hand `term.write(data, cb)`: xterm calls it once those bytes are parsed. */
  onParsed(bytes: number): () => void {
    const epoch = this.epoch;
    return () => {
      if (epoch === this.epoch) this.parsed(bytes);
    };
  }

  /** The server counts from zero again (new snapshot, or a new socket). */
  reset(): void {
    this.epoch++;
    this.unacked = 0;
    this.clearTimer();
  }

  dispose(): void {
    this.reset();
  }

  private parsed(bytes: number): void {
    this.unacked += bytes;
    if (this.unacked >= ViewerFlowControl.AckEveryBytes) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), AckTiming.FlushAfterMs);
  }

  private flush(): void {
    this.clearTimer();
    if (this.unacked === 0) return;
    const bytes = this.unacked;
    this.unacked = 0;
    this.sendAck(bytes);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
