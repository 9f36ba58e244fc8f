import { StreamConstants } from './constants';
import type { OutputLog, ViewHolder } from './output-log';
import { incompleteTailLength, leadingContinuationLength } from './utf8';

/**
 * Live output fan-out without a queue per client.
 *
 * Every client is a cursor (an absolute offset) into the session's output log. When a batch of PTY
 * bytes lands, the hub tells each cursor to pump: it reads from the log from its offset and sends as
 * long as its transport has room. A client that stops reading simply stops advancing; the shell, the
 * agent and the other clients go on, and the memory held for it is bounded by its transport's
 * watermark plus the log itself (which is bounded by configuration). If the log drops bytes a client
 * never got, the client's door decides how to tell it (execd: a new replay frame with the new offset;
 * AIO: an error frame; viewer: a fresh screen snapshot).
 *
 * Batching: the first chunk after a quiet spell goes out on the next turn of the event loop (keystroke
 * echo stays immediate); under sustained output, flushes are at least a window apart so many small PTY
 * chunks leave as few large frames. The window is BatchMs, doubled (up to MaxBatchMs) for each flush in
 * a row that found at least StreamingBytes, and BatchMs again after one that did not.
 */
export interface OutputReader {
  pump(): void;
  /** Bytes this reader wants the terminal held back for (0: none; viewers resync instead). */
  throttleLag?(now: number): number;
  /**
   * The oldest byte this reader may still want and does not have safe yet (Infinity: none): bytes it
   * has not handed to the kernel exist only in this process, and in the PTY host's log until told.
   */
  keepsFrom?(now: number): number;
  /** An agent's own socket, which holds the terminal back while it reads on (LogCursorOptions). */
  readonly holdsBackTerminal?: boolean;
}

export class OutputHub {
  private readonly readers = new Set<OutputReader>();
  private scheduled = false;
  private lastFlushAt = 0;
  private pendingBytes = 0;
  private windowMs: number = StreamConstants.BatchMs;

  constructor(private readonly afterFlush: () => void = () => undefined) {}

  get size(): number {
    return this.readers.size;
  }

  attach(reader: OutputReader): void {
    this.readers.add(reader);
  }

  detach(reader: OutputReader): void {
    this.readers.delete(reader);
  }

  /** `bytes` new bytes are in the log. */
  notify(bytes: number): void {
    this.pendingBytes += bytes;
    if (this.scheduled) return;
    this.scheduled = true;
    const wait = this.windowMs - (Date.now() - this.lastFlushAt);
    // A keystroke's echo goes at once; a burst waits out the window to leave as fewer, larger frames,
    // unless it already fills several frames (waiting would only let a small log drop unsent bytes).
    const small = this.pendingBytes <= StreamConstants.ImmediateBytes;
    const full = this.pendingBytes >= 4 * StreamConstants.MaxFrameBytes;
    if (wait <= 0 || small || full) setImmediate(() => this.flush());
    else setTimeout(() => this.flush(), wait);
  }

  /** The largest lag of a reader that holds the terminal back (see StreamConstants.ThrottleAboveBytes). */
  throttleLag(now: number): number {
    let lag = 0;
    for (const r of this.readers) lag = Math.max(lag, r.throttleLag?.(now) ?? 0);
    return lag;
  }

  /** The oldest byte a reader that holds the terminal back still needs kept (Infinity: none). */
  keepFrom(now: number): number {
    let from = Infinity;
    for (const r of this.readers) from = Math.min(from, r.keepsFrom?.(now) ?? Infinity);
    return from;
  }

  flush(): void {
    this.windowMs = this.pendingBytes >= StreamConstants.StreamingBytes ? Math.min(this.windowMs * 2, StreamConstants.MaxBatchMs) : StreamConstants.BatchMs;
    this.scheduled = false;
    this.pendingBytes = 0;
    this.lastFlushAt = Date.now();
    for (const r of this.readers) {
      try {
        r.pump();
      } catch (err) {
        console.error('ptydeck: output reader failed:', err);
        this.readers.delete(r);
      }
    }
    this.afterFlush();
  }
}

export interface LogCursorOptions {
  log: OutputLog;
  from: number;
  /** JSON doors need whole UTF-8 characters in each frame; binary doors take bytes as they are. */
  wholeCharacters: boolean;
  maxFrameBytes?: number;
  /**
   * Hands one frame's payload to the transport. `flushed` must be called once the transport has
   * handed the bytes to the kernel (ws's send callback); until then they count against the watermark.
   */
  send(payload: Buffer, channel: number, offset: number, flushed: () => void): void;
  /** Bytes [lostFrom, resumeAt) were dropped from the log before this client got them. Return false to stop. */
  onGap(lostFrom: number, resumeAt: number): boolean;
  /** An extra gate, for doors with acknowledgements: true while the client may take more. */
  mayTakeMore?(): boolean;
  /** An agent's own socket: while it reads on, a terminal read in another process waits for it (see ThrottleAboveBytes). */
  holdsBackTerminal?: boolean;
}

export class LogCursor implements OutputReader, ViewHolder {
  offset: number;
  private inflight = 0;
  /**
   * The offset of each frame handed to the transport, in order, and whether it was flushed; frames
   * before `outHead` were. The lowest one not flushed is what the log may not reuse yet (viewsFrom).
   */
  private readonly outAt: number[] = [];
  private readonly outDone: boolean[] = [];
  private outHead = 0;
  /** The number of the frame at outAt[0] (frames are numbered as sent; the lists drop flushed ones). */
  private outBase = 0;
  private stopped = false;
  /** The last pump stopped at the watermark: a drain (not only the next batch) should resume it. */
  private blocked = false;
  private readonly maxFrame: number;
  /** When the transport last took bytes (a flush), or the cursor was made. */
  private progressAt = Date.now();

  constructor(private readonly opts: LogCursorOptions) {
    this.offset = opts.from;
    this.maxFrame = opts.maxFrameBytes ?? StreamConstants.MaxFrameBytes;
    opts.log.addViewHolder(this);
  }

  stop(): void {
    this.stopped = true;
    this.releaseLogIfDone();
  }

  viewsFrom(): number {
    return this.outHead < this.outAt.length ? this.outAt[this.outHead] : Infinity;
  }

  viewsTo(): number {
    // Every frame it sent came from below its offset.
    return this.offset;
  }

  /** A stopped cursor with nothing out no longer keeps the log from reusing memory. */
  private releaseLogIfDone(): void {
    if (this.stopped && this.outHead === this.outAt.length) this.opts.log.removeViewHolder(this);
  }

  get holdsBackTerminal(): boolean {
    return this.opts.holdsBackTerminal === true;
  }

  throttleLag(now: number): number {
    if (!this.holdsNow(now)) return 0;
    return this.opts.log.end - this.offset + this.inflight;
  }

  keepsFrom(now: number): number {
    // Once in the kernel, bytes reach the client even if this process dies (its socket is closed gracefully).
    return this.holdsNow(now) ? Math.min(this.offset, this.viewsFrom()) : Infinity;
  }

  /** An agent's socket that reads on holds the terminal back; one that stalled holds nothing. */
  private holdsNow(now: number): boolean {
    return this.opts.holdsBackTerminal === true && !this.stopped && now - this.progressAt <= StreamConstants.ReaderStallMs;
  }

  /** The last pump stopped at a gate (watermark or the door's own) with output still to send. */
  get isBlocked(): boolean {
    return this.blocked;
  }

  /** Bytes handed to the transport that it has not flushed yet. */
  get unflushed(): number {
    return this.inflight;
  }

  private flushedFrame(slot: number): void {
    this.outDone[slot - this.outBase] = true;
    while (this.outHead < this.outAt.length && this.outDone[this.outHead]) this.outHead++;
    if (this.outHead === this.outAt.length || this.outHead >= 256) {
      // Drop the flushed frames from the front (a stream with always one frame out would grow them forever).
      this.outAt.splice(0, this.outHead);
      this.outDone.splice(0, this.outHead);
      this.outBase += this.outHead;
      this.outHead = 0;
      this.releaseLogIfDone();
    }
  }

  pump(): void {
    const { log } = this.opts;
    this.blocked = false;
    for (;;) {
      if (this.stopped) return;
      if (this.inflight >= StreamConstants.SocketHighWatermarkBytes || !(this.opts.mayTakeMore?.() ?? true)) {
        this.blocked = this.offset < log.end;
        return;
      }
      if (this.offset < log.start) {
        const resumeAt = log.start;
        const lostFrom = this.offset;
        this.offset = resumeAt;
        if (!this.opts.onGap(lostFrom, resumeAt)) {
          this.stopped = true;
          return;
        }
        continue;
      }
      if (this.offset >= log.end) return;
      const chunk = log.chunkAt(this.offset, this.maxFrame);
      // Null with the offset now before the log's start: those bytes were just lost (a failed read back).
      if (!chunk) {
        if (this.offset < log.start) continue;
        return;
      }
      let payload = chunk.data;
      if (this.opts.wholeCharacters) {
        const skip = leadingContinuationLength(payload);
        if (skip && this.offset === log.start) {
          // Only the log's first bytes can start mid-character (the rest was evicted): drop the fragment.
          this.offset += skip;
          continue;
        }
        const cut = incompleteTailLength(payload);
        if (cut) {
          const end = this.offset + payload.length;
          if (end < log.end) {
            // The character continues in the next segment: take it whole from a small copy.
            payload = log.read(this.offset, Math.min(log.end, end + 4 - cut));
            if (this.offset < log.start) continue;
            payload = payload.subarray(0, payload.length - incompleteTailLength(payload));
          } else payload = payload.subarray(0, payload.length - cut);
          if (payload.length === 0) return; // wait for the rest of the character
        }
      }
      const at = this.offset;
      const n = payload.length;
      this.offset += n;
      this.inflight += n;
      let done = false;
      const slot = this.outBase + this.outAt.push(at) - 1;
      this.outDone.push(false);
      this.opts.send(payload, chunk.channel, at, () => {
        if (done) return;
        done = true;
        this.inflight -= n;
        this.flushedFrame(slot);
        this.progressAt = Date.now();
        // Only a cursor held back by the watermark resumes on a drain; otherwise the hub's next batch
        // carries new output, so small PTY reads still leave as few large frames.
        if (this.blocked && this.inflight < StreamConstants.SocketLowWatermarkBytes) {
          this.blocked = false;
          setImmediate(() => this.pump());
        }
      });
    }
  }
}
