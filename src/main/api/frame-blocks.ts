import type { WebSocket } from 'ws';
import { BufferPool } from '../buffer-pool';
import { sendRaw } from './ws-util';

/**
 * Memory for the frames the doors build around output (a channel byte, an offset, JSON), used again once
 * the socket has flushed them. A fresh allocation per frame (~60 KiB under load) faulted in new memory
 * for every frame, which costs more here than building the frame (docs/PERFORMANCE.md). A frame larger
 * than a block gets memory of its own, and is not kept.
 */
const blocks = new BufferPool(128 * 1024, 32);

export interface PooledFrame {
  readonly frame: Buffer;
  /** The socket is done with the frame (it flushed it, or gave up): its memory may be used again. */
  release(): void;
}

const nothingToRelease = (): void => undefined;

/** A frame of `size` bytes, to be filled by the caller. */
export function frameOfSize(size: number): PooledFrame {
  if (size > blocks.bytes) return { frame: Buffer.allocUnsafe(size), release: nothingToRelease };
  const block = blocks.take();
  let released = false;
  return {
    frame: block.subarray(0, size),
    release: () => {
      if (released) return;
      released = true;
      blocks.give(block);
    },
  };
}

/** A frame that does not need releasing (memory of its own). */
export const ownFrame = (frame: Buffer): PooledFrame => ({ frame, release: nothingToRelease });

/** `head`, then `payload`. */
export function headedFrame(head: Uint8Array, payload: Uint8Array): PooledFrame {
  const out = frameOfSize(head.length + payload.length);
  out.frame.set(head, 0);
  out.frame.set(payload, head.length);
  return out;
}

/** Sends the frame, and gives its memory back once the socket is done with it. */
export function sendFrame(ws: WebSocket, out: PooledFrame, flushed: () => void, text = false): void {
  sendRaw(
    ws,
    out.frame,
    () => {
      out.release();
      flushed();
    },
    text,
  );
}
