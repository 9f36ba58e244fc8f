import { createWriteStream, type WriteStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { CastHeader } from '../../shared/timeline';
import { TimelineConstants } from './settings';

/**
 * Writes one session's recording as asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/):
 * a JSON header line, then one JSON array a line: `[seconds, "o", text]` output, `[t, "i", text]` input,
 * `[t, "r", "COLSxROWS"]` resizes, `[t, "m", label]` markers.
 *
 * The output path only copies the chunk and notes the time; chunks are gathered for CastCoalesceMs and
 * turned into one "o" event later. asciicast text is a JSON string, so the bytes are decoded as UTF-8
 * with a decoder that carries a character cut between two chunks over to the next, never splitting one.
 *
 * Writing never blocks: lines go to a file stream; if the disk falls CastQueueMaxBytes behind, output is
 * skipped (and a marker says how much) rather than held in memory. A failed write (a full disk) stops
 * this recording, is reported once, and the session goes on.
 */
export interface CastLimits {
  /** This recording's cap in bytes. */
  maxBytes: number;
  /** Asks the store for room in the total budget; false when there is none. */
  reserve(bytes: number): boolean;
}

export class CastWriter {
  /** The header's timestamp in ms: event times count from this whole second. */
  readonly originMs: number;
  private readonly stream: WriteStream;
  private readonly decoder = new StringDecoder('utf8');
  private staged: Buffer[] = [];
  private stagedAt = 0;
  private timer: NodeJS.Timeout | null = null;
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
    this.stream = createWriteStream(path, { flags: 'a', mode: 0o600 });
    this.stream.on('error', (err) => this.stop(`the recording could not be written: ${err.message}`, false));
    this.line(JSON.stringify(header), true);
  }

  /** Why output is no longer recorded, or null. */
  get stopped(): string | null {
    return this.stoppedWhy;
  }

  get bytes(): number {
    return this.written;
  }

  /** On the output path: a copy of the chunk (its buffer may be reused by the backend) and the time. */
  output(data: Buffer, now: number): void {
    if (this.stoppedWhy || this.ended) return;
    if (this.staged.length === 0) this.stagedAt = now;
    this.staged.push(Buffer.from(data));
    this.timer ??= setTimeout(() => this.flushOutput(), TimelineConstants.CastCoalesceMs);
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

  /** Everything staged goes to the file stream; resolves once the stream has written it. */
  async flush(): Promise<void> {
    this.flushOutput();
    if (this.ended || this.stream.destroyed) return;
    await new Promise<void>((resolve) => {
      if (this.stream.writableLength === 0) return resolve();
      this.stream.write('', () => resolve());
    });
  }

  /** Ends the recording (the session closed, or the server stops): the rest is written, the file closed. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.flushOutput();
      const tail = this.decoder.end();
      if (tail && !this.stoppedWhy) this.line(JSON.stringify([this.seconds(Date.now()), 'o', tail]));
      this.ended = true;
      if (this.stream.destroyed) return;
      await new Promise<void>((resolve) => this.stream.end(() => resolve()));
    })();
    return this.closing;
  }

  /** Any other event keeps its place after the output before it. */
  private event(now: number, code: 'i' | 'r' | 'm', data: string): void {
    if (this.ended || this.stream.destroyed) return;
    this.flushOutput();
    this.line(JSON.stringify([this.seconds(now), code, data]));
  }

  private flushOutput(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.staged.length === 0 || this.stoppedWhy) {
      this.staged = [];
      return;
    }
    const bytes = this.staged.length === 1 ? this.staged[0] : Buffer.concat(this.staged);
    this.staged = [];
    if (this.stream.writableLength > TimelineConstants.CastQueueMaxBytes) {
      // The disk is not keeping up: skip rather than grow memory; say so once it catches up.
      this.skipped += bytes.length;
      return;
    }
    if (this.skipped) {
      const note = `[ptydeck: ${this.skipped} bytes of output not recorded: the disk fell behind]`;
      this.skipped = 0;
      this.line(JSON.stringify([this.seconds(this.stagedAt), 'm', note]));
    }
    const text = this.decoder.write(bytes);
    if (text) this.line(JSON.stringify([this.seconds(this.stagedAt), 'o', text]));
  }

  private line(json: string, header = false): void {
    if (this.stoppedWhy && !header) return;
    const size = Buffer.byteLength(json) + 1;
    if (!header && this.written + size > this.limits.maxBytes) return this.stop(`this recording reached its cap of ${this.limits.maxBytes} bytes`, true);
    if (!header && !this.limits.reserve(size)) return this.stop('recordings reached their total cap and none could be deleted to make room', true);
    this.written += size;
    this.stream.write(json + '\n');
  }

  private stop(why: string, sayInFile: boolean): void {
    if (this.stoppedWhy) return;
    if (sayInFile && !this.stream.destroyed) {
      const note = JSON.stringify([this.seconds(Date.now()), 'm', `[ptydeck: recording stopped: ${why}]`]) + '\n';
      this.written += note.length;
      this.stream.write(note);
    }
    this.stoppedWhy = why;
    this.staged = [];
    this.onStop(why);
  }

  /** Seconds since the origin, to the microsecond (asciinema writes six decimals). */
  private seconds(now: number): number {
    return Math.max(0, Math.round((now - this.originMs) * 1000) / 1e6);
  }
}
