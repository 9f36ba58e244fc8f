import { write } from 'node:fs';

/**
 * Writes to a PTY's master side in order, without blocking the event loop, and knows how much is still
 * waiting. node-pty's own writer queues without bound, retries EAGAIN on every turn of the event loop
 * (a full core for as long as the program does not read), and reports "Unhandled pty write error" on
 * stderr when the terminal closes under a pending write. This one tells callers how much is pending (so
 * input can be refused and terminal-query answers dropped while the program is not reading), backs off
 * while the terminal is full, and ends quietly when the terminal does.
 */
export const PtyWriterConstants = {
  /** First retry after EAGAIN on the next turn of the loop: a terminal that is merely busy drains fast. */
  FirstRetryMs: 0,
  /** Longest wait between retries: a program that never reads costs a timer, not a core. */
  MaxRetryMs: 50,
} as const;

export class PtyWriter {
  private readonly queue: Buffer[] = [];
  private offset = 0;
  private pending = 0;
  private writing = false;
  private closed = false;
  private retryMs: number = PtyWriterConstants.FirstRetryMs;
  private retryTimer: NodeJS.Timeout | null = null;
  private drainedWaiters: (() => void)[] = [];

  constructor(private readonly fd: number) {}

  /** Calls `done` once the terminal has taken everything written so far (at once, on the next turn, if it has). */
  whenDrained(done: () => void): void {
    if (this.pending === 0) setImmediate(done);
    else this.drainedWaiters.push(done);
  }

  private drained(): void {
    for (const done of this.drainedWaiters.splice(0)) done();
  }

  /** Bytes accepted but not yet taken by the terminal. */
  get pendingBytes(): number {
    return this.pending;
  }

  write(data: Buffer): void {
    if (this.closed || data.length === 0) return;
    this.queue.push(data);
    this.pending += data.length;
    if (!this.writing && !this.retryTimer) this.next();
  }

  /** The terminal is gone (or going): drop what waits, and never touch the descriptor again. */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
    this.pending = 0;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.drained();
  }

  private next(): void {
    if (this.closed || this.queue.length === 0) return;
    const head = this.queue[0];
    this.writing = true;
    write(this.fd, head, this.offset, head.length - this.offset, null, (err, written) => {
      this.writing = false;
      if (this.closed) return;
      if (err) {
        if (err.code === 'EAGAIN') {
          // The terminal's input buffer is full: the program is not reading. Try again, more slowly each time.
          this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            this.next();
          }, this.retryMs);
          this.retryMs = Math.min(PtyWriterConstants.MaxRetryMs, Math.max(1, this.retryMs * 2));
          return;
        }
        // EIO, EBADF: the terminal closed; its exit is reported by the process, not here.
        this.close();
        return;
      }
      this.retryMs = PtyWriterConstants.FirstRetryMs;
      this.pending -= written;
      this.offset += written;
      if (this.offset >= head.length) {
        this.queue.shift();
        this.offset = 0;
      }
      if (this.pending === 0) this.drained();
      this.next();
    });
  }
}
