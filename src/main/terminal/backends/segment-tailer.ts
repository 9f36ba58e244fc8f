import { closeSync, existsSync, openSync, readdirSync, readSync, rmSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';

/**
 * Follows the output a tmux pane writes through `pipe-pane ... split -b SEGMENT -a 8 - seg.`: fixed-size
 * files seg.aaaaaaaa, seg.aaaaaaab, ... in order. Because every segment but the last is exactly
 * SegmentBytes long, segment i starts at absolute offset i * SegmentBytes, whoever reads it and whenever:
 * a ptydeck that restarts finds the same offsets, and output written while it was down is simply read
 * late. Fully read segments older than the newest `keep` are deleted, so the disk holds about what the
 * output log can use.
 */
export const SegmentBytes = 4 * 1024 * 1024;
const PREFIX = 'seg.';
const ReadChunkBytes = 256 * 1024;

export function segmentIndex(name: string): number {
  let n = 0;
  for (const ch of name.slice(PREFIX.length)) n = n * 26 + (ch.charCodeAt(0) - 97);
  return n;
}

export function segmentName(index: number): string {
  let s = '';
  let n = index;
  for (let i = 0; i < 8; i++) {
    s = String.fromCharCode(97 + (n % 26)) + s;
    n = Math.floor(n / 26);
  }
  return PREFIX + s;
}

export function listSegments(dir: string): number[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.startsWith(PREFIX) && /^[a-z]{8}$/.test(n.slice(PREFIX.length)))
    .map(segmentIndex)
    .sort((a, b) => a - b);
}

export class SegmentTailer {
  private index: number;
  private position = 0;
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private reading = false;
  private lastDataAt = Date.now();
  /** One read buffer, reused: every consumer copies what it keeps (the output log does) before returning. */
  private readonly buf = Buffer.allocUnsafe(ReadChunkBytes);

  constructor(
    private readonly dir: string,
    private readonly keep: number,
    /** Must not keep `data` past the call: the buffer is reused for the next read. */
    private readonly onData: (data: Buffer, offset: number) => void,
  ) {
    const existing = listSegments(dir);
    this.index = existing.length ? existing[0] : 0;
  }

  /** Absolute offset of the first byte this tailer delivers (where the session's log starts). */
  get startOffset(): number {
    return this.index * SegmentBytes + this.position;
  }

  get idleFor(): number {
    return Date.now() - this.lastDataAt;
  }

  start(): void {
    try {
      this.watcher = watch(this.dir, () => this.pump());
      this.watcher.on('error', () => undefined);
    } catch {
      // No inotify here: the poll below still follows the files.
    }
    // A slow poll as well: inotify may coalesce or miss events (and is absent on some filesystems).
    this.timer = setInterval(() => this.pump(), 100);
    this.timer.unref();
    this.pump();
  }

  /** Reads everything available now. */
  pump(): void {
    if (this.stopped || this.reading) return;
    this.reading = true;
    try {
      for (;;) {
        const file = join(this.dir, segmentName(this.index));
        let fd: number;
        try {
          fd = openSync(file, 'r');
        } catch {
          return; // not written yet
        }
        let got = 0;
        try {
          for (;;) {
            const n = readSync(fd, this.buf, 0, this.buf.length, this.position);
            if (n <= 0) break;
            const offset = this.index * SegmentBytes + this.position;
            this.position += n;
            got += n;
            this.lastDataAt = Date.now();
            // Lent for the call (SessionEvents' `output`): whoever keeps bytes copies them.
            this.onData(this.buf.subarray(0, n), offset);
          }
        } finally {
          closeSync(fd);
        }
        if (this.position >= SegmentBytes && existsSync(join(this.dir, segmentName(this.index + 1)))) {
          this.index++;
          this.position = 0;
          this.prune();
          continue;
        }
        if (got === 0) return;
      }
    } finally {
      this.reading = false;
    }
  }

  stop(): void {
    this.stopped = true;
    this.watcher?.close();
    if (this.timer) clearInterval(this.timer);
  }

  private prune(): void {
    for (const i of listSegments(this.dir)) {
      if (i < this.index - this.keep) rmSync(join(this.dir, segmentName(i)), { force: true });
    }
  }
}
