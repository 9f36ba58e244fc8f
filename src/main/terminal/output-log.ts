import { OutputLogConstants } from './constants';

/**
 * Everything a session printed, addressed by absolute byte offset (0 = the first byte the shell ever wrote).
 *
 * Bounded: once more than `capacity` bytes are held, whole segments are dropped from the front, so
 * `start` moves forward while `end` only grows. Readers hold offsets, never buffers, which is what lets
 * any number of clients follow one session without a queue each.
 *
 * Segments start small and double up to SegmentBytes, so an idle session costs a few KiB, not the capacity.
 */
export class OutputLog {
  private readonly segments: Segment[] = [];
  private total = 0;
  /** Pipe-mode sessions tag byte ranges with a channel (1 stdout, 2 stderr); a PTY has one channel. */
  private readonly channelRuns: { offset: number; channel: number }[] = [];

  constructor(readonly capacity: number = OutputLogConstants.DefaultCapacityBytes) {
    if (!(capacity > 0)) throw new RangeError('output log capacity must be positive');
  }

  /** Offset of the oldest byte still held. */
  get start(): number {
    return this.segments.length ? this.segments[0].start : this.total;
  }

  /** Offset one past the newest byte (= total bytes ever appended). */
  get end(): number {
    return this.total;
  }

  get retainedBytes(): number {
    return this.total - this.start;
  }

  /** Makes an empty log begin at `offset` (a session re-adopted after a restart resumes its offsets). */
  startAt(offset: number): void {
    if (this.total !== 0 || this.segments.length) throw new Error('startAt is only for an empty log');
    this.total = offset;
  }

  /**
   * The bytes before `offset` that this log has not got are lost for good (a backend dropped them
   * before we read them): everything held is let go and the log continues at `offset`. Readers behind
   * it see the gap as they would an eviction.
   */
  skipTo(offset: number): void {
    if (offset <= this.total) return;
    this.segments.length = 0;
    this.channelRuns.length = 0;
    this.total = offset;
  }

  append(chunk: Uint8Array, channel = 1): void {
    if (chunk.length === 0) return;
    const lastRun = this.channelRuns[this.channelRuns.length - 1];
    if (!lastRun || lastRun.channel !== channel) this.channelRuns.push({ offset: this.total, channel });
    let pos = 0;
    while (pos < chunk.length) {
      let seg = this.segments[this.segments.length - 1];
      if (!seg || seg.used === seg.buf.length) {
        seg = this.newSegment(chunk.length - pos);
        this.segments.push(seg);
      }
      const n = Math.min(seg.buf.length - seg.used, chunk.length - pos);
      seg.buf.set(chunk.subarray(pos, pos + n), seg.used);
      seg.used += n;
      pos += n;
      this.total += n;
    }
    this.evict();
  }

  /**
   * The bytes from `from` up to `maxBytes`, without copying: they stop at the end of a segment and at a
   * channel change, so a caller loops until it reaches `end`. `from` below `start` is the caller's to handle.
   */
  chunkAt(from: number, maxBytes: number): { data: Buffer; channel: number } | null {
    if (from < this.start || from >= this.total) return null;
    const seg = this.segmentAt(from);
    const within = from - seg.start;
    let stop = Math.min(seg.used, within + maxBytes);
    const nextRun = this.channelRuns.find((r) => r.offset > from);
    if (nextRun && nextRun.offset - seg.start < stop) stop = nextRun.offset - seg.start;
    return { data: seg.buf.subarray(within, stop), channel: this.channelAt(from) };
  }

  /** A copy of [from, to), clamped to what is held. */
  read(from: number, to: number = this.total): Buffer {
    const lo = Math.max(from, this.start);
    const hi = Math.min(to, this.total);
    if (hi <= lo) return Buffer.alloc(0);
    const parts: Buffer[] = [];
    let pos = lo;
    while (pos < hi) {
      const seg = this.segmentAt(pos);
      const a = pos - seg.start;
      const b = Math.min(seg.used, hi - seg.start);
      parts.push(seg.buf.subarray(a, b));
      pos += b - a;
    }
    return parts.length === 1 ? Buffer.from(parts[0]) : Buffer.concat(parts);
  }

  /** Finds the first occurrence of `needle` at or after `from` (searching held bytes only), or -1. */
  indexOf(needle: Buffer, from: number, to: number = this.total): number {
    const lo = Math.max(from, this.start);
    if (to - lo < needle.length) return -1;
    // Overlap segment edges by reading the window as one buffer; only used on small windows (an echo line).
    const idx = this.read(lo, to).indexOf(needle);
    return idx < 0 ? -1 : lo + idx;
  }

  private channelAt(offset: number): number {
    for (let i = this.channelRuns.length - 1; i >= 0; i--) if (this.channelRuns[i].offset <= offset) return this.channelRuns[i].channel;
    return 1;
  }

  private segmentAt(offset: number): Segment {
    // Binary search: the log of a long flood holds thousands of segments.
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.segments[mid].start <= offset) lo = mid;
      else hi = mid - 1;
    }
    return this.segments[lo];
  }

  private newSegment(wanted: number): Segment {
    const last = this.segments[this.segments.length - 1];
    const grown = last ? last.buf.length * 2 : 16 * 1024;
    const size = Math.min(OutputLogConstants.SegmentBytes, Math.max(grown, Math.min(wanted, OutputLogConstants.SegmentBytes)), this.capacity);
    return { start: this.total, buf: Buffer.allocUnsafe(Math.max(size, 1)), used: 0 };
  }

  private evict(): void {
    while (this.segments.length > 1 && this.total - this.segments[1].start >= this.capacity) this.segments.shift();
    // A single oversized segment never exceeds capacity by construction (segments are <= capacity).
    const start = this.start;
    while (this.channelRuns.length > 1 && this.channelRuns[1].offset <= start) this.channelRuns.shift();
  }
}

interface Segment {
  start: number;
  buf: Buffer;
  used: number;
}
