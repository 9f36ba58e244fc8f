import type { CastHeader } from '../../shared/timeline';
import type { CastThread, FromWorker } from './cast-worker';
import { TimelineConstants } from './settings';

/**
 * One session's recording as asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/): a JSON
 * header line, then one JSON array a line: `[seconds, "o", text]` output, `[t, "i", text]` input,
 * `[t, "r", "COLSxROWS"]` resizes, `[t, "m", label]` markers.
 *
 * On the output path this only copies the chunk into a staging buffer (its own buffer may be reused by
 * the backend) and notes the time. Every CastCoalesceMs the staged bytes are handed, without a copy, to
 * the recording thread (cast-worker.ts), which decodes them as UTF-8 with a decoder that carries a
 * character cut between two chunks over to the next, JSON-escapes and writes them.
 *
 * Writing never blocks: when the thread falls CastQueueMaxBytes behind (a slow disk), output is skipped
 * and a marker says how much, rather than held in memory. A failed write (a full disk) stops this
 * recording, is reported once, and the session goes on.
 */
export interface CastLimits {
  /** This recording's cap in bytes. */
  maxBytes: number;
  /** Asks the store for room in the total budget; false when there is none. */
  reserve(bytes: number): boolean;
}

/** Per line, besides its text: `[123.456789, "o", ""]` and the newline. */
const LineOverheadBytes = 24;
/** A staging buffer's size: a few PTY reads; a larger chunk gets a buffer of its own size. */
const StagingBytes = 256 * 1024;

let nextId = 0;

export class CastWriter {
  /** The header's timestamp in ms: event times count from this whole second. */
  readonly originMs: number;
  private readonly id = ++nextId;
  private staging: Buffer | null = null;
  private used = 0;
  private stagedAt = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Output bytes handed to the thread and not yet handled by it. */
  private queued = 0;
  /** The file's size as far as it is known (the thread reports it; events in between are estimated). */
  private written = 0;
  private skipped = 0;
  private stoppedWhy: string | null = null;
  private ended = false;
  private closing: Promise<void> | null = null;
  private readonly unlisten: () => void;

  constructor(
    private readonly thread: CastThread,
    readonly path: string,
    header: CastHeader,
    private readonly limits: CastLimits,
    /** Called once, when output stops being recorded, with the reason. */
    private readonly onStop: (why: string) => void,
  ) {
    this.originMs = header.timestamp * 1000;
    this.unlisten = thread.listen(this.id, (m) => this.fromThread(m));
    const json = JSON.stringify(header);
    this.written = Buffer.byteLength(json) + 1;
    limits.reserve(this.written);
    thread.post({ op: 'open', id: this.id, path, header: json });
  }

  /** Why output is no longer recorded, or null. */
  get stopped(): string | null {
    return this.stoppedWhy;
  }

  get bytes(): number {
    return this.written;
  }

  /** On the output path: copy the chunk into the staging buffer and note the time. Nothing else. */
  output(data: Buffer, now: number): void {
    if (this.stoppedWhy || this.ended) return;
    if (this.queued + this.used > TimelineConstants.CastQueueMaxBytes) {
      this.skipped += data.length;
      return;
    }
    if (this.staging && this.used + data.length > this.staging.length) this.postOutput();
    if (!this.staging) {
      // Its own ArrayBuffer (not Node's pool), so it can be handed to the thread without a copy.
      const reuse = data.length <= StagingBytes ? this.thread.spareBuffer() : undefined;
      this.staging = Buffer.from(reuse ?? new ArrayBuffer(Math.max(StagingBytes, data.length)));
      this.used = 0;
      this.stagedAt = now;
    }
    data.copy(this.staging, this.used);
    this.used += data.length;
    this.timer ??= setTimeout(() => this.postOutput(), TimelineConstants.CastCoalesceMs);
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

  /** Ends the current "o" event here: what follows gets an event (and a time) of its own. */
  cut(): void {
    this.postOutput();
  }

  /** Resolves once everything recorded so far is in the file. */
  async flush(): Promise<void> {
    this.postOutput();
    if (this.closing) return this.closing;
    await this.thread.ticket((ticket) => ({ op: 'flush', id: this.id, ticket }));
  }

  /** Ends the recording (the session closed, or the server stops): the rest is written, the file closed. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.postOutput();
      this.ended = true;
      await this.thread.ticket((ticket) => ({ op: 'close', id: this.id, t: this.seconds(Date.now()), ticket }));
      this.unlisten();
    })();
    return this.closing;
  }

  /** Any other event keeps its place after the output before it. */
  private event(now: number, code: 'i' | 'r' | 'm', data: string): void {
    if (this.ended || this.stoppedWhy) return;
    this.postOutput();
    if (!this.take(Buffer.byteLength(data) + LineOverheadBytes)) return;
    this.thread.post({ op: 'event', id: this.id, t: this.seconds(now), code, data });
  }

  private postOutput(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const staging = this.staging;
    const length = this.used;
    this.staging = null;
    this.used = 0;
    if (!staging || length === 0 || this.stoppedWhy) return;
    if (this.skipped) {
      const note = `[ptydeck: ${this.skipped} bytes of output not recorded: the disk fell behind]`;
      this.skipped = 0;
      this.event(this.stagedAt, 'm', note);
      if (this.stoppedWhy) return;
    }
    if (!this.take(length + LineOverheadBytes)) return;
    this.queued += length;
    this.thread.post({ op: 'output', id: this.id, t: this.seconds(this.stagedAt), bytes: staging.buffer as ArrayBuffer, length }, [staging.buffer as ArrayBuffer]);
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

  private fromThread(m: FromWorker): void {
    if (m.op === 'done') {
      this.queued = Math.max(0, this.queued - m.bytes);
      if (m.buffer.byteLength === StagingBytes) this.thread.giveBack(m.buffer);
      // The thread knows the exact size; keep the larger of it and our estimate (events may be in flight).
      this.written = Math.max(this.written, m.fileBytes);
    } else if (m.op === 'failed') {
      this.queued = 0;
      this.stop(`the recording could not be written: ${m.error}`, false);
    }
  }

  private stop(why: string, sayInFile = true): void {
    if (this.stoppedWhy) return;
    if (sayInFile && !this.ended) this.thread.post({ op: 'event', id: this.id, t: this.seconds(Date.now()), code: 'm', data: `[ptydeck: recording stopped: ${why}]` });
    this.stoppedWhy = why;
    this.staging = null;
    this.used = 0;
    this.onStop(why);
  }

  /** Seconds since the origin, to the microsecond (asciinema writes six decimals). */
  private seconds(now: number): number {
    return Math.max(0, Math.round((now - this.originMs) * 1000) / 1e6);
  }
}
