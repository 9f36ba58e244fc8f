import { isUtf8 } from 'node:buffer';

/**
 * AIO's JSON output frame, `{"type":"output","data":"<text>"}`, built from the PTY's bytes directly:
 * the bytes are escaped into the frame as they are, instead of decoding them to a string, having
 * JSON.stringify escape that, and the socket encode it back to UTF-8 (three passes and two large
 * strings per frame). The result is byte for byte what JSON.stringify would have produced.
 *
 * Only for valid UTF-8 (a text frame must be; the caller cuts frames at character boundaries): bytes
 * that are not are decoded the usual way, so a malformed sequence becomes U+FFFD as before.
 */
const PREFIX = Buffer.from('{"type":"output","data":"', 'latin1');
const SUFFIX = Buffer.from('"}', 'latin1');
const HEX = Buffer.from('0123456789abcdef', 'latin1');

/** 0: copy as is; otherwise the byte after the backslash ('u' for \u00XX). */
const ESCAPE = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) ESCAPE[b] = 0x75; // u
ESCAPE[0x08] = 0x62; // \b
ESCAPE[0x09] = 0x74; // \t
ESCAPE[0x0a] = 0x6e; // \n
ESCAPE[0x0c] = 0x66; // \f
ESCAPE[0x0d] = 0x72; // \r
ESCAPE[0x22] = 0x22; // \"
ESCAPE[0x5c] = 0x5c; // \\

/** Reused between frames: the worst case is 6 output bytes per input byte (\u00XX). */
let scratch = Buffer.allocUnsafeSlow(0);

export function outputJsonFrame(payload: Buffer): Buffer {
  if (!isUtf8(payload)) return Buffer.from(JSON.stringify({ type: 'output', data: payload.toString('utf8') }), 'utf8');
  const worst = PREFIX.length + payload.length * 6 + SUFFIX.length;
  if (scratch.length < worst) scratch = Buffer.allocUnsafeSlow(Math.max(worst, 64 * 1024));
  const out = scratch;
  let o = PREFIX.copy(out, 0);
  let run = 0;
  const n = payload.length;
  for (let i = 0; i < n; i++) {
    const e = ESCAPE[payload[i]];
    if (e === 0) continue;
    // Copy the plain run before this byte in one go, then its escape.
    if (i > run) o += payload.copy(out, o, run, i);
    run = i + 1;
    out[o++] = 0x5c;
    out[o++] = e;
    if (e === 0x75) {
      const b = payload[i];
      out[o++] = 0x30;
      out[o++] = 0x30;
      out[o++] = HEX[b >> 4];
      out[o++] = HEX[b & 15];
    }
  }
  if (n > run) o += payload.copy(out, o, run, n);
  o += SUFFIX.copy(out, o);
  // A copy of exactly the frame: the socket may hold it after we return, and scratch is reused.
  return Buffer.from(out.subarray(0, o));
}
