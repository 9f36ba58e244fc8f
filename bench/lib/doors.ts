import WebSocket from 'ws';
import type { BenchServer } from './server';
import type { StreamCheck } from './stream-check';

/**
 * One client per output door, each speaking that door's protocol and feeding the bytes it receives to
 * a StreamCheck. Each resolves once attached (the door's first frame arrived), so that the command is
 * only typed once someone is listening.
 */
export type DoorName = 'aio-binary' | 'aio-json' | 'execd' | 'viewer';

export const DoorLabels: Record<DoorName, string> = {
  'aio-binary': 'AIO WebSocket, binary',
  'aio-json': 'AIO WebSocket, JSON',
  execd: 'execd WebSocket',
  viewer: 'viewer WebSocket',
};

export interface DoorClient {
  ws: WebSocket;
  close(): Promise<void>;
}

/**
 * Opens a socket with its message handler attached before the handshake completes: a door's first
 * frame may arrive in the same read as the upgrade answer, before any later listener could see it.
 */
export function openSocket(url: string, onMessage?: (data: Buffer, isBinary: boolean, ws: WebSocket) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
    if (onMessage) ws.on('message', (data, isBinary) => onMessage(toBuffer(data), isBinary, ws));
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`${url.replace(/api_key=[^&]+/, 'api_key=…')}: HTTP ${res.statusCode}`)));
  });
}

export function closeSocket(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      ws.terminate();
      resolve();
    }, 2000);
    ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    else ws.close();
  });
}

const toBuffer = (data: WebSocket.RawData): Buffer => (Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data));

/** A one-shot flag a message handler raises and an attach waits for (with a deadline). */
function signal(ms: number, what: string): { raise(): void; wait: Promise<void> } {
  let raise!: () => void;
  let reject!: (e: Error) => void;
  const wait = new Promise<void>((res, rej) => {
    raise = res;
    reject = rej;
  });
  const timer = setTimeout(() => reject(new Error(`${what}: no first frame within ${ms} ms`)), ms);
  void wait.then(() => clearTimeout(timer), () => undefined);
  return { raise, wait };
}

/** AIO's terminal socket. Binary: raw PTY bytes. JSON: `{"type":"output","data"}` with UTF-8 text. */
export async function attachAio(srv: BenchServer, id: string, check: StreamCheck, protocol: 'binary' | 'json'): Promise<DoorClient> {
  const ready = signal(10_000, `AIO ${protocol} ${id}`);
  const ws = await openSocket(srv.wsUrl(`/v2/pty/sessions/${encodeURIComponent(id)}/ws`, { protocol }), (buf, isBinary) => {
    if (isBinary) {
      check.feed(buf);
      return;
    }
    const frame = JSON.parse(buf.toString('utf8')) as { type: string; data?: string };
    if (frame.type === 'output' && typeof frame.data === 'string') check.feed(Buffer.from(frame.data, 'utf8'));
    else if (frame.type === 'ready') ready.raise();
    else if (frame.type === 'error') check.noteLoss(String(frame.data));
  });
  await ready.wait;
  return { ws, close: () => closeSocket(ws) };
}

/** execd's socket: 0x01 stdout frames; a 0x03 replay frame after the first one means this client fell behind. */
export async function attachExecd(srv: BenchServer, id: string, check: StreamCheck): Promise<DoorClient> {
  const connected = signal(10_000, `execd ${id}`);
  let isConnected = false;
  const ws = await openSocket(srv.wsUrl(`/pty/${encodeURIComponent(id)}/ws`), (buf, isBinary) => {
    if (!isBinary) {
      const frame = JSON.parse(buf.toString('utf8')) as { type: string; error?: string };
      if (frame.type === 'connected') {
        isConnected = true;
        connected.raise();
      }
      else if (frame.type === 'error') check.noteLoss(String(frame.error));
      return;
    }
    const channel = buf[0];
    if (channel === 0x01 || channel === 0x02) check.feed(buf.subarray(1));
    else if (channel === 0x03) {
      // The first replay (before `connected`) is history; a later one resumes after a gap.
      if (isConnected) check.noteLoss(`replay frame at offset ${buf.readBigUInt64BE(1)} (the client fell behind the log)`);
      check.feed(buf.subarray(9));
    }
  });
  await connected.wait;
  return { ws, close: () => closeSocket(ws) };
}

/**
 * The viewer's socket: a JSON snapshot, then binary frames. The server keeps at most 1 MiB
 * unacknowledged, so this client acks every frame as soon as it has consumed it, as a viewer that
 * parses instantly would; `resync` means the server skipped output for it.
 */
export async function attachViewer(srv: BenchServer, id: string, check: StreamCheck): Promise<DoorClient> {
  const snapshot = signal(10_000, `viewer ${id}`);
  const ws = await openSocket(srv.wsUrl(`/api/sessions/${encodeURIComponent(id)}/view`), (buf, isBinary, socket) => {
    if (isBinary) {
      check.feed(buf);
      socket.send(`{"type":"ack","bytes":${buf.length}}`);
      return;
    }
    const frame = JSON.parse(buf.toString('utf8')) as { type: string; data?: string; reason?: string; message?: string };
    if (frame.type === 'snapshot' && typeof frame.data === 'string') {
      check.feed(Buffer.from(frame.data, 'utf8'));
      snapshot.raise();
    }
    else if (frame.type === 'resync') check.noteLoss(`resync: ${frame.reason}`);
    else if (frame.type === 'error') check.noteLoss(`error: ${frame.message}`);
  });
  await snapshot.wait;
  return { ws, close: () => closeSocket(ws) };
}

export async function attachDoor(door: DoorName, srv: BenchServer, id: string, check: StreamCheck): Promise<DoorClient> {
  switch (door) {
    case 'aio-binary':
      return attachAio(srv, id, check, 'binary');
    case 'aio-json':
      return attachAio(srv, id, check, 'json');
    case 'execd':
      return attachExecd(srv, id, check);
    case 'viewer':
      return attachViewer(srv, id, check);
  }
}
