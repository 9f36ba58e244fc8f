import { close, openSync, writev } from 'node:fs';
import type { CastHeader } from '../../shared/timeline';
import { recordHead, RecordHeadBytes, type RecordCode } from './recording-file';
import { BufferPool } from '../buffer-pool';
import { TimelineConstants } from './settings';

/**
 * One session's recording, written as records (recording-file.ts): output `o` as the terminal printed
 * it, input `i`, resizes `r` ("COLSxROWS") and markers `m`, each with its time since the header's.
 *
 * On the output path this only copies the chunk into a block of staging memory (output buffers are
 * lent for the call only: SessionEvents) and notes the time: a chunk joins the current output record,
 * or starts the next one when it comes CastCoalesceMs after the record began (or the record holds
 * CastRecordMaxBytes). Records are written together, CastWriteEveryMs after the first of them waits (or
 * once CastRecordMaxBytes wait), with one `writev` on libuv's threads: no decoding, no timer per chunk,
 * and a few writes a second per busy session (a write per record cost the server's thread as much as
 * sending the same bytes to a client, with 50 sessions printing at once). Staging blocks go back to a
 * pool once the bytes copied into them are written, so a long flood copies into memory it has used
 * before: fresh memory costs more in page faults than the copy (PERFORMANCE.md, fifth pass).
 *
 * Writing never blocks: when the disk falls CastQueueMaxBytes behind, output is skipped and a marker
 * says how much, rather than held in memory. A failed write (a full disk) stops this recording, is
 * reported once, and the session goes on.
 */
export interface CastLimits {
  /** This recording's cap in bytes. */
  maxBytes: number;
  /** Asks the store for room in the total budget; false when there is none. */
  reserve(bytes: number): boolean;
}

/** Staging memory: output is copied in at `used`; `refs` counts the parts that still wait for their write. */
interface Block {
  buf: Buffer;
  used: number;
  refs: number;
}

/** Blocks whose bytes are all written, for any recording of the process to fill again. */
const freeBlocks = new BufferPool(TimelineConstants.CastBlockBytes, TimelineConstants.CastFreeBlocks);
/** A staged or queued part's block, found from the memory it views (other parts are in none). */
const blockOf = new WeakMap<ArrayBufferLike, Block>();

export class RecordingWriter {
  /** The header's timestamp in ms: event times count from this whole second. */
  readonly originMs: number;
  private fd: number | null = null;
  /** The output record being gathered: its parts (views of staging blocks), their length, its time. */
  private staged: Buffer[] = [];
  private stagedBytes = 0;
  private stagedAt = 0;
  /** The block output is copied into now. */
  private block: Block | null = null;
  /** Set while records wait for their write. */
  private timer: NodeJS.Timeout | null = null;
  /** Parts waiting for the write in flight to finish, in file order. */
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private writing = false;
  private drained: (() => void)[] = [];
  /** The file's size once everything reserved is written. */
  private written = 0;
  private skipped = 0;
  private stoppedWhy: string | null = null;
  private ended = false;
  private closing: Promise<void> | null = null;

  constructor(
    readonly path: string,
    header: CastHeader,
    private readonly limits: CastLimits,
    /** Called once, when output stops being recorded, with the reason. */
    private readonly onStop: (why: string) => void,
  ) {
    this.originMs = header.timestamp * 1000;
    const line = Buffer.from(`${JSON.stringify(header)}\n`);
    try {
      this.fd = openSync(path, 'a', 0o600);
    } catch (err) {
      this.stop(`the recording could not be written: ${(err as Error).message}`, false);
      return;
    }
    this.written = line.length;
    limits.reserve(line.length);
    this.enqueue([line]);
  }

  /** Why output is no longer recorded, or null. */
  get stopped(): string | null {
    return this.stoppedWhy;
  }

  get bytes(): number {
    return this.written;
  }

  /** On the output path: keep the chunk and note the time. Nothing else. */
  output(data: Buffer, now: number): void {
    if (this.stoppedWhy || this.ended || data.length === 0) return;
    if (this.queuedBytes + this.stagedBytes > TimelineConstants.CastQueueMaxBytes) {
      this.skipped += data.length;
      return;
    }
    if (this.stagedBytes > 0 && (now - this.stagedAt >= TimelineConstants.CastCoalesceMs || this.stagedBytes >= TimelineConstants.CastRecordMaxBytes)) this.postOutput();
    if (this.stagedBytes === 0) this.stagedAt = now;
    let pos = 0;
    while (pos < data.length) {
      let block = this.block;
      if (!block || block.used === block.buf.length) {
        if (block) this.seal(block);
        // Memory of its own (never a slice of Node's shared pool), so a part names its block.
        block = this.block = { buf: freeBlocks.take(), used: 0, refs: 0 };
        blockOf.set(block.buf.buffer, block);
      }
      const n = data.copy(block.buf, block.used, pos);
      this.staged.push(block.buf.subarray(block.used, block.used + n));
      block.refs++;
      block.used += n;
      pos += n;
    }
    this.stagedBytes += data.length;
    this.timer ??= setTimeout(() => this.writeNow(), TimelineConstants.CastWriteEveryMs);
  }

  input(text: string, now: number): void {
    this.event(now, 'i', text);
  }

  resize(cols: number, rows: number, now: number): void {
    this.event(now, 'r', `${cols}x${rows}`);
  }

  marker(label: string, now: number): void {
    this.event(now, 'm', label);
  }

  /** Ends the current output record here: what follows gets a record (and a time) of its own. */
  cut(): void {
    this.postOutput();
  }

  /** Resolves once everything recorded so far is in the file. */
  flush(): Promise<void> {
    this.writeNow();
    if (!this.writing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  /** Ends the recording (the session closed, or the server stops): the rest is written, the file closed. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.postOutput();
      this.ended = true;
      if (this.block) this.seal(this.block);
      await this.flush();
      const fd = this.fd;
      this.fd = null;
      if (fd !== null) await new Promise<void>((resolve) => close(fd, () => resolve()));
    })();
    return this.closing;
  }

  /** Any other event keeps its place after the output before it. */
  private event(now: number, code: Exclude<RecordCode, 'o'>, text: string): void {
    if (this.ended || this.stoppedWhy) return;
    this.postOutput();
    const payload = Buffer.from(text);
    if (!this.take(payload.length + RecordHeadBytes)) return;
    this.enqueue([recordHead(code, this.seconds(now), payload.length), payload]);
  }

  /** Ends the output record gathered so far and writes everything waiting. */
  private writeNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.postOutput();
    this.pump();
  }

  /** Ends the output record gathered so far: it waits for the next write. */
  private postOutput(): void {
    const parts = this.staged;
    const length = this.stagedBytes;
    this.staged = [];
    this.stagedBytes = 0;
    if (length === 0 || this.stoppedWhy) return this.release(parts);
    if (this.skipped) {
      const note = `[ptydeck: ${this.skipped} bytes of output not recorded: the disk fell behind]`;
      this.skipped = 0;
      this.event(this.stagedAt, 'm', note);
      if (this.stoppedWhy) return this.release(parts);
    }
    if (!this.take(length + RecordHeadBytes)) return this.release(parts);
    this.enqueue([recordHead('o', this.seconds(this.stagedAt), length), ...parts]);
  }

  private enqueue(parts: Buffer[]): void {
    for (const p of parts) {
      this.queue.push(p);
      this.queuedBytes += p.length;
    }
    if (this.queuedBytes >= TimelineConstants.CastRecordMaxBytes) this.writeNow();
    else this.timer ??= setTimeout(() => this.writeNow(), TimelineConstants.CastWriteEveryMs);
  }

  /** One write at a time, so the file keeps the order things happened in. */
  private pump(): void {
    if (this.writing) return;
    const fd = this.fd;
    if (fd === null || this.queue.length === 0) {
      for (const resolve of this.drained.splice(0)) resolve();
      return;
    }
    const parts = this.queue;
    const total = this.queuedBytes;
    this.queue = [];
    this.queuedBytes = 0;
    this.writing = true;
    writev(fd, parts, (err, n) => {
      this.writing = false;
      if (err) {
        this.release(parts);
        this.fail(err);
        return;
      }
      // libuv writes all of it or fails; a short count goes on from where it stopped all the same.
      if (n < total) {
        const rest = Buffer.concat(parts).subarray(n);
        this.queue.unshift(rest);
        this.queuedBytes += rest.length;
      }
      this.release(parts);
      this.pump();
    });
  }

  /** These parts' bytes are written (or dropped): a sealed block none of whose parts wait is free again. */
  private release(parts: Buffer[]): void {
    for (const p of parts) {
      const b = blockOf.get(p.buffer);
      if (b && --b.refs === 0 && b !== this.block) freeBlock(b);
    }
  }

  /** Output no longer goes into this block: it is free once its parts are written. */
  private seal(block: Block): void {
    this.block = null;
    if (block.refs === 0) freeBlock(block);
  }

  private fail(err: Error): void {
    const fd = this.fd;
    this.fd = null;
    if (fd !== null) close(fd, () => undefined);
    this.release(this.queue);
    this.queue = [];
    this.queuedBytes = 0;
    this.stop(`the recording could not be written: ${err.message}`, false);
    this.pump();
  }

  /** Room for `n` more bytes in this recording and in the total; stops the recording when there is none. */
  private take(n: number): boolean {
    if (this.written + n > this.limits.maxBytes) {
      this.stop(`this recording reached its cap of ${this.limits.maxBytes} bytes`);
      return false;
    }
    if (!this.limits.reserve(n)) {
      this.stop('recordings reached their total cap and none could be deleted to make room');
      return false;
    }
    this.written += n;
    return true;
  }

  private stop(why: string, sayInFile = true): void {
    if (this.stoppedWhy) return;
    if (sayInFile && !this.ended && this.fd !== null) {
      const payload = Buffer.from(`[ptydeck: recording stopped: ${why}]`);
      this.written += payload.length + RecordHeadBytes;
      this.enqueue([recordHead('m', this.seconds(Date.now()), payload.length), payload]);
    }
    this.stoppedWhy = why;
    this.release(this.staged);
    this.staged = [];
    this.stagedBytes = 0;
    if (this.block) this.seal(this.block);
    this.onStop(why);
  }

  /** Seconds since the origin, to the microsecond (asciinema writes six decimals). */
  private seconds(now: number): number {
    return Math.max(0, Math.round((now - this.originMs) * 1000) / 1e6);
  }
}

function freeBlock(block: Block): void {
  freeBlocks.give(block.buf);
}

/** Staging blocks free for reuse (tests). */
export function freeRecordingBlocks(): number {
  return freeBlocks.waiting;
}
