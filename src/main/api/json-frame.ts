import { isUtf8 } from 'node:buffer';
import { Utf8JsonEscaper } from '../json-text';

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
/**
 * Frames are written into blocks that are used again once the socket has flushed them: a fresh ~60 KiB
 * allocation per frame faulted in new memory for every frame, which costs more here than building it.
 * A frame larger than a block (text with many escapes) gets memory of its own.
 */
const FrameBlockBytes = 128 * 1024;
const FreeBlocksKept = 32;
const freeBlocks: Buffer[] = [];
const SUFFIX = Buffer.from('"}', 'latin1');
/** A payload here is whole UTF-8, so nothing is ever carried from one frame to the next. */
const escaper = new Utf8JsonEscaper();

export interface OutputJsonFrame {
  frame: Buffer;
  /** The socket is done with the frame (it flushed it, or gave up): its memory may be used again. */
  release(): void;
}

const keep = (): void => undefined;

export function outputJsonFrame(payload: Buffer): OutputJsonFrame {
  if (!isUtf8(payload)) return { frame: Buffer.from(JSON.stringify({ type: 'output', data: payload.toString('utf8') }), 'utf8'), release: keep };
  const body = escaper.write(payload);
  // The frame in memory of its own until released: the socket holds it after we return, and the
  // escaper's result is a view of a buffer it reuses.
  const size = PREFIX.length + body.length + SUFFIX.length;
  const pooled = size <= FrameBlockBytes;
  const block = pooled ? (freeBlocks.pop() ?? Buffer.allocUnsafeSlow(FrameBlockBytes)) : Buffer.allocUnsafe(size);
  PREFIX.copy(block, 0);
  block.set(body, PREFIX.length);
  SUFFIX.copy(block, PREFIX.length + body.length);
  let released = !pooled;
  return {
    frame: block.subarray(0, size),
    release: () => {
      if (released) return;
      released = true;
      if (freeBlocks.length < FreeBlocksKept) freeBlocks.push(block);
    },
  };
}
