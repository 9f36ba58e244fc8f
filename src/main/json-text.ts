import { isUtf8 } from 'node:buffer';

/**
 * Terminal output bytes as the inside of a JSON string, straight from bytes to bytes: valid UTF-8 is
 * copied as it is, `"` `\` and control characters are escaped (as JSON.stringify escapes them), and
 * bytes that are not UTF-8 become U+FFFD, so the file stays valid UTF-8 and JSON.
 *
 * Why not `JSON.stringify(decoder.write(bytes))`: decoding to a JS string, escaping it and encoding it
 * back costs ~45 ms of CPU per MiB of mixed text here (measured on the bench payload), a byte loop
 * that validates as it goes 6-10 ms, and one that need not (escapeWhole: a chunk of whole valid UTF-8,
 * the common case, checked first by the native isUtf8) 1.6 ms. Output is converted in bulk: a recording
 * as it is read (timeline/recording-file.ts), every frame of AIO's JSON socket (api/json-frame.ts).
 *
 * A character cut at the end of a chunk is held back and finished by the next chunk, so output is
 * only ever split at whole characters.
 */
export class Utf8JsonEscaper {
  private carry: Uint8Array = new Uint8Array(0);
  /**
   * Reused between writes, by every escaper (one thread escapes one chunk at a time): a chunk's escaped
   * text is at most six times its length, so one of these per recording was 1.5 MiB each.
   */
  private static scratch: Buffer = Buffer.alloc(0);

  /**
   * The escaped text of `chunk` (and of the character a previous chunk left unfinished). The result is
   * a view of a buffer the next call (on any escaper) reuses: write it out before calling again.
   */
  write(chunk: Uint8Array): Uint8Array {
    if (this.carry.length === 0 && isUtf8(chunk)) return Utf8JsonEscaper.escapeWhole(chunk);
    let src = chunk;
    if (this.carry.length) {
      src = new Uint8Array(this.carry.length + chunk.length);
      src.set(this.carry, 0);
      src.set(chunk, this.carry.length);
      this.carry = new Uint8Array(0);
    }
    const n = src.length;
    const out = Utf8JsonEscaper.scratchFor(n);
    let o = 0;
    let i = 0;
    while (i < n) {
      const b = src[i];
      if (b < 0x80) {
        if (NEEDS_ESCAPE[b] === 0) out[o++] = b;
        else o = writeEscape(out, o, b);
        i++;
        continue;
      }
      // A multi-byte character: its length from the lead byte, its second byte's range from the
      // lead (no overlong forms, no surrogates, nothing above U+10FFFF), then plain continuations.
      let need = 0;
      let lo = 0x80;
      let hi = 0xbf;
      if (b >= 0xc2 && b <= 0xdf) need = 2;
      else if (b >= 0xe0 && b <= 0xef) {
        need = 3;
        if (b === 0xe0) lo = 0xa0;
        else if (b === 0xed) hi = 0x9f;
      } else if (b >= 0xf0 && b <= 0xf4) {
        need = 4;
        if (b === 0xf0) lo = 0x90;
        else if (b === 0xf4) hi = 0x8f;
      }
      let bad = need === 0 ? 1 : 0;
      for (let k = 1; bad === 0 && k < need; k++) {
        if (i + k >= n) {
          // Valid so far, cut by the chunk's end: finish it with the next chunk.
          this.carry = src.slice(i);
          return out.subarray(0, o);
        }
        const c = src[i + k];
        if (k === 1 ? c < lo || c > hi : c < 0x80 || c > 0xbf) bad = k;
      }
      if (bad === 0) {
        for (let k = 0; k < need; k++) out[o++] = src[i + k];
        i += need;
      } else {
        // Not UTF-8: one U+FFFD for the bytes before the one that broke the sequence.
        out[o++] = 0xef;
        out[o++] = 0xbf;
        out[o++] = 0xbd;
        i += bad;
      }
    }
    return out.subarray(0, o);
  }

  private static scratchFor(bytes: number): Buffer {
    if (Utf8JsonEscaper.scratch.length < bytes * 6 + 16) Utf8JsonEscaper.scratch = Buffer.allocUnsafeSlow(bytes * 6 + 16);
    return Utf8JsonEscaper.scratch;
  }

  /**
   * Valid UTF-8 in whole characters needs only `"`, `\\` and control bytes escaped, all ASCII; every other
   * byte, multi-byte characters included, is copied as it is. Without the validation, one table look per
   * byte (1.6 ms/MiB on the bench payload, against 3 for JSON.stringify of the bytes as latin1 text).
   */
  private static escapeWhole(src: Uint8Array): Uint8Array {
    const out = Utf8JsonEscaper.scratchFor(src.length);
    const n = src.length;
    let o = 0;
    for (let i = 0; i < n; i++) {
      const b = src[i];
      if (NEEDS_ESCAPE[b] === 0) out[o++] = b;
      else o = writeEscape(out, o, b);
    }
    return out.subarray(0, o);
  }

  /** The end of the stream: a character left unfinished becomes U+FFFD. */
  end(): Uint8Array {
    const unfinished = this.carry.length > 0;
    this.carry = new Uint8Array(0);
    return unfinished ? Uint8Array.from([0xef, 0xbf, 0xbd]) : new Uint8Array(0);
  }
}

/** 1 for the bytes JSON escapes inside a string: control characters, `"` and `\\`. */
const NEEDS_ESCAPE = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) NEEDS_ESCAPE[b] = 1;
NEEDS_ESCAPE[0x22] = 1;
NEEDS_ESCAPE[0x5c] = 1;

/** Writes the escape of `b` (one NEEDS_ESCAPE marks) at `o` and returns where it ends: as JSON.stringify writes it. */
function writeEscape(out: Uint8Array, o: number, b: number): number {
  out[o++] = 0x5c;
  // \" \\ \b \t \n \f \r; other control bytes as \u00XX (lower-case hex).
  const short = b === 0x22 ? 0x22 : b === 0x5c ? 0x5c : b === 0x08 ? 0x62 : b === 0x09 ? 0x74 : b === 0x0a ? 0x6e : b === 0x0c ? 0x66 : b === 0x0d ? 0x72 : 0;
  if (short) {
    out[o++] = short;
    return o;
  }
  const hi = b >> 4;
  const lo = b & 15;
  out[o++] = 0x75;
  out[o++] = 0x30;
  out[o++] = 0x30;
  out[o++] = hi < 10 ? 0x30 + hi : 0x57 + hi;
  out[o++] = lo < 10 ? 0x30 + lo : 0x57 + lo;
  return o;
}
