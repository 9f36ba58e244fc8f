import { isUtf8 } from 'node:buffer';
import { Utf8JsonEscaper } from '../json-text';
import { frameOfSize, ownFrame, type PooledFrame } from './frame-blocks';

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
/** A payload here is whole UTF-8, so nothing is ever carried from one frame to the next. */
const escaper = new Utf8JsonEscaper();

export function outputJsonFrame(payload: Buffer): PooledFrame {
  if (!isUtf8(payload)) return ownFrame(Buffer.from(JSON.stringify({ type: 'output', data: payload.toString('utf8') }), 'utf8'));
  const body = escaper.write(payload);
  // Copied out at once: the escaper's result is a view of a buffer it reuses.
  const out = frameOfSize(PREFIX.length + body.length + SUFFIX.length);
  PREFIX.copy(out.frame, 0);
  out.frame.set(body, PREFIX.length);
  SUFFIX.copy(out.frame, PREFIX.length + body.length);
  return out;
}
