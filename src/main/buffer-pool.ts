/**
 * Buffers of one size that their user has let go of, for the next user to fill again. On the machines
 * ptydeck was measured on, faulting in fresh memory cost more per MiB than the work done in it
 * (docs/PERFORMANCE.md), so the output log's segments, the recordings' staging blocks and the doors'
 * frames are reused through one of these each. At most `kept` wait; a buffer given back is the giver's
 * promise that nothing reads or writes it any more.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];

  constructor(
    readonly bytes: number,
    private kept: number,
  ) {}

  /** Keep at most `n` from now on (what waits beyond it is let go of); returns the bytes let go of. */
  keepAtMost(n: number): number {
    this.kept = Math.max(0, Math.floor(n));
    const over = Math.max(0, this.free.length - this.kept);
    this.free.length -= over;
    return over * this.bytes;
  }

  /** A buffer of `bytes`: one given back, or new memory of its own (never a slice of Node's shared pool). */
  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.bytes);
  }

  give(buf: Buffer): void {
    if (buf.length === this.bytes && this.free.length < this.kept) this.free.push(buf);
  }

  /** Buffers waiting to be taken (tests). */
  get waiting(): number {
    return this.free.length;
  }

  /** Lets go of every buffer waiting. */
  clear(): void {
    this.free.length = 0;
  }
}
