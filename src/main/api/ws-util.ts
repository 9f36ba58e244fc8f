import { WebSocket, type RawData } from 'ws';
import { LogCursor, type LogCursorOptions } from '../terminal/output-hub';
import type { Session } from '../terminal/session';

/** Protocol-level keepalive: a socket that answers no ping for two intervals is dead and is dropped. */
export const KeepaliveMs = 30_000;

export function keepalive(ws: WebSocket, intervalMs = KeepaliveMs): void {
  let alive = true;
  ws.on('pong', () => (alive = true));
  const timer = setInterval(() => {
    if (!alive) {
      ws.terminate();
      return;
    }
    alive = false;
    try {
      ws.ping();
    } catch {
      // closed meanwhile
    }
  }, intervalMs);
  timer.unref();
  ws.once('close', () => clearInterval(timer));
}

export function isOpen(ws: WebSocket): boolean {
  return ws.readyState === WebSocket.OPEN;
}

export function sendJson(ws: WebSocket, frame: unknown, cb?: () => void): void {
  if (!isOpen(ws)) {
    cb?.();
    return;
  }
  ws.send(JSON.stringify(frame), (err) => {
    void err;
    cb?.();
  });
}

/**
 * Sends and reports when the bytes left for the kernel; a failed or closed socket counts as flushed.
 * A Buffer goes as a binary frame, unless `text` (bytes that are already UTF-8 JSON, see json-frame.ts).
 */
export function sendRaw(ws: WebSocket, data: Buffer | string, flushed: () => void, text = typeof data === 'string'): void {
  if (!isOpen(ws)) {
    flushed();
    return;
  }
  ws.send(data, { binary: !text }, () => flushed());
}

export function asText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

export function asBuffer(data: RawData): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  return data;
}

/** Parses a text frame as a JSON object, or null when it is not one. */
export function jsonObject(text: string): Record<string, unknown> | null {
  const t = text.trimStart();
  if (!t.startsWith('{')) return null;
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Attaches a live cursor for `ws` to the session, starting at `from`, and detaches it when the socket
 * closes. The cursor is created, and its offset taken, in the caller's synchronous step: see the
 * replay invariant in each door.
 */
export function attachCursor(session: Session, ws: WebSocket, opts: Omit<LogCursorOptions, 'log'>, as: { viewer?: boolean } = {}): { cursor: LogCursor; detach: () => void } {
  const cursor = new LogCursor({ ...opts, log: session.log });
  const release = session.attach(cursor, as);
  const detach = (): void => {
    cursor.stop();
    release();
  };
  ws.once('close', detach);
  return { cursor, detach };
}
