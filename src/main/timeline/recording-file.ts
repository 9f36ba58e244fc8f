import { createReadStream, statSync } from 'node:fs';
import { pipeline, Readable, Transform, type TransformCallback } from 'node:stream';
import { Utf8JsonEscaper } from '../json-text';

/**
 * A recording as it is kept on disk (`<key>.ptyrec`): the asciicast v2 header as its first line, then
 * the events as binary records, each
 *
 *   code   1 byte    'o' output, 'i' input, 'r' resize ("COLSxROWS"), 'm' marker
 *   time   8 bytes   seconds since the header's timestamp, a little-endian float64
 *   length 4 bytes   of the payload, little-endian
 *   payload          output: the bytes the terminal printed, as they were; the others: UTF-8 text
 *
 * Why not asciicast itself on disk: asciicast holds output as JSON strings, so every byte a terminal
 * prints would be escaped as it is printed, and recording is on by default. Through a thread of its own
 * (a copy, a message, the escaping) that cost the server 5.6 ms of CPU per MiB of a single stream and
 * about 12 with 50 sessions printing at once; records, written from the output's own buffers, cost 0.4
 * and 3-5 (docs/PERFORMANCE.md, fourth pass). The escaping happens when someone reads a recording, which is rare and can wait (castStream
 * below). A file cut short (a crash) reads up to its
 * last whole record.
 */
export type RecordCode = 'o' | 'i' | 'r' | 'm';

export const RecordHeadBytes = 13;
const MaxTextPayloadBytes = 1 << 20;

/** The record's head, for the payload that follows it. */
export function recordHead(code: RecordCode, seconds: number, length: number): Buffer {
  const head = Buffer.allocUnsafe(RecordHeadBytes);
  head[0] = code.charCodeAt(0);
  head.writeDoubleLE(seconds, 1);
  head.writeUInt32LE(length, 9);
  return head;
}

/**
 * Turns a recording file's bytes into asciicast v2 text, record by record: output keeps characters whole
 * across records (the escaper carries a character cut between two), and a record whose bytes end inside
 * a character gives only its whole ones. The input must start at the file's first byte.
 */
export class RecordsToCast extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private headerDone = false;
  private readonly escaper = new Utf8JsonEscaper();
  private lastOutputAt = 0;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    try {
      this.drain();
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    const tail = this.escaper.end();
    if (tail.length) this.outputLine(this.lastOutputAt, tail);
    done();
  }

  private drain(): void {
    let pos = 0;
    const buf = this.pending;
    if (!this.headerDone) {
      const nl = buf.indexOf(0x0a);
      if (nl < 0) return;
      this.push(buf.subarray(0, nl + 1));
      this.headerDone = true;
      pos = nl + 1;
    }
    while (buf.length - pos >= RecordHeadBytes) {
      const code = String.fromCharCode(buf[pos]);
      const t = buf.readDoubleLE(pos + 1);
      const length = buf.readUInt32LE(pos + 9);
      if (!'oirm'.includes(code) || !Number.isFinite(t)) throw new Error(`not a ptydeck recording: a record at byte ${pos} has code ${buf[pos]}`);
      if (code !== 'o' && length > MaxTextPayloadBytes) throw new Error(`not a ptydeck recording: a ${code} record of ${length} bytes`);
      if (buf.length - pos - RecordHeadBytes < length) break;
      const payload = buf.subarray(pos + RecordHeadBytes, pos + RecordHeadBytes + length);
      pos += RecordHeadBytes + length;
      if (code === 'o') {
        this.lastOutputAt = t;
        const body = this.escaper.write(payload);
        if (body.length) this.outputLine(t, body);
      } else {
        this.push(`${JSON.stringify([t, code, payload.toString('utf8')])}\n`);
      }
    }
    this.pending = pos === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(pos));
  }

  /** The escaper's result is a view of a buffer it reuses: pushed as a copy. */
  private outputLine(t: number, body: Uint8Array): void {
    const line = Buffer.allocUnsafe(body.length + 32);
    let n = line.write(`[${t},"o","`);
    line.set(body, n);
    n += body.length;
    n += line.write('"]\n', n);
    this.push(line.subarray(0, n));
  }
}

/** The first `size` bytes of a recording file, as asciicast v2 text. */
export function castStream(path: string, size: number): Readable {
  if (size <= 0) return Readable.from([]);
  const out = new RecordsToCast();
  // An error (the file deleted meanwhile, a damaged record) ends the answer early; nothing else hears of it.
  pipeline(createReadStream(path, { start: 0, end: size - 1, highWaterMark: 256 * 1024 }), out, () => undefined);
  return out;
}

/** All of a recording file as asciicast v2 text (tests, small files). */
export async function castText(path: string, size = Infinity): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of castStream(path, Number.isFinite(size) ? size : statSync(path).size)) parts.push(Buffer.from(part as Buffer));
  return Buffer.concat(parts).toString('utf8');
}
