import { closeSync, fstatSync, ftruncateSync, mkdtempSync, openSync, readSync, rmSync, unlinkSync, write } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BufferPool } from '../buffer-pool';
import { OutputLogConstants } from './constants';

/**
 * Everything a session printed, addressed by absolute byte offset (0 = the first byte the shell ever wrote).
 *
 * Bounded: once more than `capacity` bytes are held, whole segments are dropped from the front, so
 * `start` moves forward while `end` only grows. Readers hold offsets, never buffers, which is what lets
 * any number of clients follow one session without a queue each.
 *
 * Segments start small and double up to SegmentBytes, so an idle session costs a few KiB, not the capacity.
 *
 * Under a memory budget (memory-budget.ts), whole cold segments can be spilled to a file: they keep their
 * offsets and are read back from disk when asked for (a slow client's backlog, a replay), so memory holds
 * only each session's hot tail while the log still holds its full capacity. The writes run on libuv's
 * threads, one at a time per log, and a segment keeps its memory until its write has landed: written on
 * the event loop, they held it for a quarter of the server's time with 50 sessions printing at once
 * (PERFORMANCE.md, eleventh pass).
 */
export class OutputLog {
  private readonly segments: Segment[] = [];
  private total = 0;
  /** Pipe-mode sessions tag byte ranges with a channel (1 stdout, 2 stderr); a PTY has one channel. */
  private readonly channelRuns: { offset: number; channel: number }[] = [];
  private spillFile: SpillFile | null = null;
  private spilledSegments = 0;
  /** Segments waiting for their turn to be written to the spill file, oldest first, and the one being written. */
  private spillQueue: Segment[] = [];
  private spillWriting: Segment | null = null;
  /** Segments ever queued for spilling, and those whose turn is over (written, failed or no longer wanted). */
  private spillsQueued = 0;
  private spillsSettled = 0;
  private readonly spillWaiters: { upTo: number; resolve: () => void }[] = [];
  /** The last spilled segment read back (a cursor reads one segment in several frames). */
  private readBack: { seg: Segment; buf: Buffer } | null = null;

  /**
   * Readers that hand views of this log's memory (chunkAt) to others. The memory of a segment the log
   * lets go of (evicted, or spilled by the memory budget) is reused for new output, by this log or
   * another, instead of allocating afresh: a log at capacity that goes on filling (a flood) otherwise
   * allocates one segment per segment it evicts, and on the machines this was measured on, faulting in
   * fresh memory cost more than all the log's other work (a reader that kept the last 8 MiB it read:
   * 110-160 page faults and 4-8 ms of CPU per MiB more than one that kept nothing). Reuse is safe because
   * every view is taken by a reader that says which bytes it still has out: a segment is reused only once
   * no view of it is out. LogCursor, the one reader that takes views, does so: its transports report
   * when the kernel has a frame, and until then the frame counts as out.
   */
  private readonly viewHolders = new Set<ViewHolder>();

  /**
   * Nothing from this offset on is evicted (-Infinity: nothing at all; Infinity, the default: the log is
   * a plain ring). The bytes may still be wanted by a reader that cannot afford a gap: the PTY host's
   * server and its agents' sockets across a restart. Whoever sets it stops appending once `keptFull`;
   * what arrives meanwhile is held too (past capacity), and evicted once the mark moves on.
   */
  keepFrom = Infinity;

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

  /** The log holds its capacity in bytes it may not evict (keepFrom): appending more grows it past capacity. */
  get keptFull(): boolean {
    return this.total - Math.max(this.start, this.keepFrom) >= this.capacity;
  }

  /** Size of the file spilled segments are in (0 without one). */
  get spillFileBytes(): number {
    return this.spillFile?.bytes ?? 0;
  }

  /**
   * Bytes of memory the log holds (segments not spilled, at their allocated size, and the one read back),
   * less the segments on their way to disk: theirs is let go of as soon as their write lands.
   */
  get residentBytes(): number {
    let n = this.readBack?.buf.length ?? 0;
    for (const seg of this.segments) if (seg.buf && !seg.spill) n += seg.buf.length;
    return n;
  }

  /**
   * Moves whole segments older than the newest `keepBytes` to disk (in `dir`), oldest first, until
   * `wanted` bytes of memory are freed. Returns the bytes freed, or to be freed once their writes land
   * (a write that fails frees nothing, and nothing more is spilled until the next call).
   */
  spillCold(keepBytes: number, wanted: number, dir: string | null = null): number {
    // The segment read back last is a copy of what is on disk already: the cheapest memory to give back.
    let freed = this.readBack?.buf.length ?? 0;
    this.readBack = null;
    const hotFrom = this.total - keepBytes;
    const ringBytes = this.capacity + 2 * OutputLogConstants.SegmentBytes;
    for (const seg of this.segments) {
      if (freed >= wanted) break;
      if (!seg.buf || seg.spill || seg.used !== seg.buf.length || seg.start + seg.used > hotFrom) continue;
      // A log kept past its capacity (keepFrom) would put this segment where an older one sits in the ring.
      if (seg.start + seg.used - this.start > ringBytes) break;
      try {
        this.spillFile ??= new SpillFile(dir, ringBytes);
      } catch {
        break;
      }
      seg.spill = 'queued';
      this.spillQueue.push(seg);
      this.spillsQueued++;
      freed += seg.buf.length;
    }
    this.writeNextSpill();
    return freed;
  }

  /** A segment is being written to the spill file, or waits for its turn: the file must not be emptied under it. */
  private get spilling(): boolean {
    return this.spillWriting !== null || this.spillQueue.length > 0;
  }

  /** Resolves once the spill writes started so far have landed (their memory is then let go of), or failed. */
  spillsLanded(): Promise<void> {
    const upTo = this.spillsQueued;
    if (this.spillsSettled >= upTo) return Promise.resolve();
    return new Promise((resolve) => this.spillWaiters.push({ upTo, resolve }));
  }

  private settleSpills(n: number): void {
    this.spillsSettled += n;
    for (let i = this.spillWaiters.length - 1; i >= 0; i--) {
      if (this.spillWaiters[i].upTo > this.spillsSettled) continue;
      this.spillWaiters[i].resolve();
      this.spillWaiters.splice(i, 1);
    }
  }

  /** Writes the oldest queued segment; the next waits for it, so two writes to one place never race. */
  private writeNextSpill(): void {
    if (this.spillWriting) return;
    let seg = this.spillQueue.shift();
    for (; seg && seg.spill !== 'queued'; seg = this.spillQueue.shift()) this.settleSpills(1);
    if (!seg?.buf || !this.spillFile) return;
    const written = seg;
    written.spill = 'writing';
    this.spillWriting = written;
    this.spillFile.write(written.buf!.subarray(0, written.used), written.start, (err) => {
      this.spillWriting = null;
      // Unless it was evicted (or the log skipped past it) meanwhile: then nothing of it is wanted.
      if (written.spill === 'writing') {
        written.spill = undefined;
        // A failed write keeps its segment, and the rest, in memory.
        if (err) this.dropSpillQueue();
        else {
          this.keepSpare(written);
          written.buf = null;
          this.spilledSegments++;
        }
      }
      this.settleSpills(1);
      this.writeNextSpill();
    });
  }

  private dropSpillQueue(): void {
    const dropped = this.spillQueue.splice(0);
    for (const q of dropped) q.spill = undefined;
    this.settleSpills(dropped.length);
  }

  /**
   * A segment's bytes: its memory, or read back from the spill file. Null when the file cannot give them
   * back (a disk error): the bytes up to that segment's end are then lost for good, and the log begins
   * after them, as after an eviction, so every reader sees the loss as the gap it already handles.
   */
  private bytesOf(seg: Segment): Buffer | null {
    if (seg.buf) return seg.buf;
    if (this.readBack?.seg === seg) return this.readBack.buf;
    const buf = Buffer.allocUnsafe(seg.used);
    try {
      this.spillFile!.read(buf, seg.start);
    } catch (err) {
      this.loseThrough(seg, err as Error);
      return null;
    }
    this.readBack = { seg, buf };
    return buf;
  }

  private loseThrough(seg: Segment, err: Error): void {
    const at = this.segments.indexOf(seg);
    if (at < 0) throw err; // not this log's: nothing to drop, and a reader would ask again forever
    const lost = seg.start + seg.used - this.start;
    console.error(`ptydeck: ${lost} bytes of output spilled to disk could not be read back (${err.message}); readers continue after them`);
    const gone = this.segments.splice(0, at + 1);
    for (const g of gone) this.letGo(g);
    this.trimChannelRuns();
  }

  /** A segment leaves the front of the log (evicted, or lost): its memory, or its place in the spill file, is let go of. */
  private letGo(gone: Segment): void {
    if (gone.buf) {
      this.keepSpare(gone);
      gone.spill = undefined;
      return;
    }
    if (this.readBack?.seg === gone) this.readBack = null;
    // With no spilled segment left, the file is emptied (its disk space given back), unless a write is
    // on its way to it.
    if (--this.spilledSegments === 0 && !this.spilling) this.spillFile?.reset();
  }

  private trimChannelRuns(): void {
    const start = this.start;
    while (this.channelRuns.length > 1 && this.channelRuns[1].offset <= start) this.channelRuns.shift();
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
    this.spilledSegments = 0;
    this.readBack = null;
    // A write on its way lands in the emptied file, at a place no later write precedes: harmless.
    this.dropSpillQueue();
    if (this.spillWriting) this.spillWriting.spill = undefined;
    this.spillFile?.reset();
  }

  append(chunk: Uint8Array, channel = 1): void {
    if (chunk.length === 0) return;
    const lastRun = this.channelRuns[this.channelRuns.length - 1];
    if (!lastRun || lastRun.channel !== channel) this.channelRuns.push({ offset: this.total, channel });
    let pos = 0;
    while (pos < chunk.length) {
      let seg = this.segments[this.segments.length - 1];
      if (!seg || !seg.buf || seg.used === seg.buf.length) {
        seg = this.newSegment(chunk.length - pos);
        this.segments.push(seg);
      }
      const buf = seg.buf!;
      const n = Math.min(buf.length - seg.used, chunk.length - pos);
      buf.set(chunk.subarray(pos, pos + n), seg.used);
      seg.used += n;
      pos += n;
      this.total += n;
    }
    this.evict();
  }

  /**
   * The bytes from `from` up to `maxBytes`, without copying: they stop at the end of a segment and at a
   * channel change, so a caller loops until it reaches `end`. `from` below `start` is the caller's to
   * handle, and null with `from` now below `start` means those bytes were just lost (see bytesOf).
   */
  chunkAt(from: number, maxBytes: number): { data: Buffer; channel: number } | null {
    if (from < this.start || from >= this.total) return null;
    const seg = this.segmentAt(from);
    const within = from - seg.start;
    let stop = Math.min(seg.used, within + maxBytes);
    const nextRun = this.channelRuns.find((r) => r.offset > from);
    if (nextRun && nextRun.offset - seg.start < stop) stop = nextRun.offset - seg.start;
    const bytes = this.bytesOf(seg);
    return bytes && { data: bytes.subarray(within, stop), channel: this.channelAt(from) };
  }

  /** A reader that hands views of this log (chunkAt) to others: their memory is not reused while it has them out. */
  addViewHolder(holder: ViewHolder): void {
    this.viewHolders.add(holder);
  }

  removeViewHolder(holder: ViewHolder): void {
    this.viewHolders.delete(holder);
  }

  /** Segments' memory waiting for reuse, shared by every log of this process (see viewHolders). */
  static get spareSegments(): number {
    return spares.waiting;
  }

  /** Lets go of every spare segment. */
  static dropSpareSegments(): void {
    spares.clear();
  }

  /**
   * Keeps up to `bytes` of spare segments from now on (at least OutputLogConstants.SpareSegments' worth);
   * returns the bytes let go of by lowering it.
   */
  static keepSpareBytes(bytes: number): number {
    return spares.keepAtMost(Math.max(OutputLogConstants.SpareSegments, Math.floor(bytes / OutputLogConstants.SegmentBytes)));
  }

  /**
   * A copy of [from, to), clamped to what is held. The copy always ends at min(to, end); it begins at
   * `from` unless that is below `start`, or the bytes there were lost while reading them (see bytesOf):
   * a caller that needs the offset of its first byte takes min(to, end) - length.
   */
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
      const bytes = this.bytesOf(seg);
      // Lost: what is left of the range begins after them.
      if (!bytes) return this.read(from, to);
      parts.push(bytes.subarray(a, b));
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

  /**
   * Where the last `lines` lines before `end` begin: the offset just after the `lines`-th newline
   * counted back from `end`, looking no lower than `lowest`; null when there are fewer. Reads the held
   * bytes in place, segment by segment (no copy of the range).
   */
  lineStartBefore(end: number, lines: number, lowest: number): number | null {
    const lo = Math.max(lowest, this.start);
    let pos = Math.min(end, this.total);
    let left = lines;
    while (pos > lo && left > 0) {
      const seg = this.segmentAt(pos - 1);
      const bytes = this.bytesOf(seg);
      if (!bytes) return this.lineStartBefore(end, lines, lowest);
      const floor = Math.max(lo, seg.start) - seg.start;
      let at = pos - seg.start;
      while (left > 0 && at > floor) {
        const nl = bytes.lastIndexOf(0x0a, at - 1);
        if (nl < floor) {
          at = floor;
          break;
        }
        left--;
        at = nl;
      }
      pos = seg.start + at;
      if (left === 0) return pos + 1;
    }
    return null;
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
    const grown = last ? last.size * 2 : 16 * 1024;
    const size = Math.max(1, Math.min(OutputLogConstants.SegmentBytes, Math.max(grown, Math.min(wanted, OutputLogConstants.SegmentBytes)), this.capacity));
    const buf = size === spares.bytes ? spares.take() : Buffer.allocUnsafe(size);
    return { start: this.total, buf, used: 0, size };
  }

  /** Keeps the memory of a segment this log lets go of (evicted, spilled) for reuse, if no view of it is out. */
  private keepSpare(gone: Segment): void {
    // Memory a write is still reading from is garbage once the write is done, never a spare before.
    if (!gone.buf || gone.spill === 'writing') return;
    const end = gone.start + gone.used;
    for (const holder of this.viewHolders) if (holder.viewsFrom() < end && holder.viewsTo() > gone.start) return;
    spares.give(gone.buf);
  }

  private evict(): void {
    while (this.segments.length > 1 && this.total - this.segments[1].start >= this.capacity && this.segments[1].start <= this.keepFrom) {
      this.letGo(this.segments.shift()!);
    }
    // A single oversized segment never exceeds capacity by construction (segments are <= capacity).
    this.trimChannelRuns();
  }
}

/** Full-size segments' memory let go of by some log, for any log of this process to fill again. */
const spares = new BufferPool(OutputLogConstants.SegmentBytes, OutputLogConstants.SpareSegments);

/** Who may have views of a log's memory out (see OutputLog's viewHolders). */
export interface ViewHolder {
  /** The lowest offset of any view it has out (Infinity: none). */
  viewsFrom(): number;
  /**
   * An offset no view it has out reaches (its views lie in [viewsFrom, viewsTo)): a stalled reader's
   * frames pin the memory they view, not the segments a flood fills after them.
   */
  viewsTo(): number;
}

interface Segment {
  start: number;
  /** Null once spilled to disk (its bytes are in the spill file, at its offset). */
  buf: Buffer | null;
  /** On its way to the spill file: waiting for its turn, or being written (its memory read meanwhile). */
  spill?: 'queued' | 'writing';
  used: number;
  /** Allocated size (kept when the buffer is spilled: the next segment doubles from it). */
  size: number;
}

/** A spill file's descriptor is closed when its log is collected: a door may read a closed session's log for a while. */
const spillFiles = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
});

/**
 * One log's spilled segments, in a file unlinked as soon as it is opened: only this process can reach
 * it (0600 in a 0700 directory, then no name at all), and a crash leaves nothing behind.
 *
 * Bytes sit at their log offset modulo `ringBytes`. A log holds no more than its capacity plus a segment
 * (unless kept past it, and then it spills nothing further than `ringBytes` from its oldest byte), so two
 * bytes it still holds never share a place, and the file never grows past `ringBytes`
 * however long a session streams while its older segments keep going to disk (appended, the file grew
 * by everything spilled until the log had no spilled segment left, which a busy session never reaches).
 */
class SpillFile {
  private readonly fd: number;

  constructor(
    dir: string | null,
    private readonly ringBytes: number,
  ) {
    const where = mkdtempSync(join(dir ?? tmpdir(), 'ptydeck-spill-'));
    const path = join(where, 'log');
    try {
      this.fd = openSync(path, 'w+', 0o600);
      unlinkSync(path);
    } finally {
      rmSync(where, { recursive: true, force: true });
    }
    spillFiles.register(this, this.fd);
  }

  get bytes(): number {
    return fstatSync(this.fd).size;
  }

  /** Writes the bytes that start at log offset `offset`, on libuv's threads; `bytes` must not change meanwhile. */
  write(bytes: Buffer, offset: number, done: (err: Error | null) => void): void {
    const at = offset % this.ringBytes;
    write(this.fd, bytes, 0, Math.min(bytes.length, this.ringBytes - at), at, (err, n) => {
      if (err) done(err);
      else if (n < bytes.length) this.write(bytes.subarray(n), offset + n, done);
      else done(null);
    });
  }

  /** Reads the bytes that start at log offset `offset` (as many as `into` holds). */
  read(into: Buffer, offset: number): void {
    let done = 0;
    while (done < into.length) {
      const at = (offset + done) % this.ringBytes;
      const n = readSync(this.fd, into, done, Math.min(into.length - done, this.ringBytes - at), at);
      if (n <= 0) throw new Error('spilled output is missing from its file');
      done += n;
    }
  }

  reset(): void {
    ftruncateSync(this.fd, 0);
  }
}
