/**
 * One read buffer for every terminal this process reads. Node gives each read of a stream a fresh 64 KiB
 * allocation, and a PTY read fills about 4 KiB of it: faulting in fresh memory for every read was the
 * largest cost per MiB left in the PTY host (docs/PERFORMANCE.md). net's `onread` reads into a caller's
 * buffer instead, but node-pty builds its stream itself, so the same switch is made on that stream: the
 * symbols net keeps the buffer under are its own, found on the stream by name.
 *
 * Sharing one buffer is safe because a read and its callback are one step of the loop: libuv reads into
 * the buffer and calls back before it reads any other descriptor. What a callback is given is lent for the
 * call only: it copies what it keeps (the output log does).
 */
export const SharedReadBytes = 64 * 1024;

let shared: Buffer | null = null;

/** The buffer, made on first use (its own memory, not a slice of Node's pool). */
export function sharedReadBuffer(): Buffer {
  return (shared ??= Buffer.allocUnsafeSlow(SharedReadBytes));
}

interface UserBufferHandle {
  useUserBuffer(buffer: Uint8Array): void;
  reading?: boolean;
}

/**
 * Makes `stream` (a net.Socket over a terminal, not reading yet) deliver each read as a view of the shared
 * buffer to `deliver`, and nothing to its 'data' listeners. False, with the stream untouched, where this
 * Node does not keep its `onread` state as expected: the caller reads through 'data' then.
 */
export function readIntoSharedBuffer(stream: unknown, deliver: (data: Buffer) => void): boolean {
  if (typeof stream !== 'object' || stream === null) return false;
  const own = Object.getOwnPropertySymbols(stream);
  const named = (name: string): symbol | undefined => own.find((s) => s.description === name);
  const kBuffer = named('kBuffer');
  const kBufferCb = named('kBufferCb');
  const kBufferGen = named('kBufferGen');
  const fields = stream as Record<symbol, unknown> & { _handle?: Partial<UserBufferHandle> | null };
  const handle = fields._handle;
  if (!kBuffer || !kBufferCb || !kBufferGen || fields[kBuffer] !== null || !handle || typeof handle.useUserBuffer !== 'function' || handle.reading) return false;
  const buffer = sharedReadBuffer();
  handle.useUserBuffer(buffer);
  fields[kBuffer] = buffer;
  fields[kBufferGen] = null;
  fields[kBufferCb] = (nread: number, buf: Buffer): void => deliver(buf.subarray(0, nread));
  return true;
}
