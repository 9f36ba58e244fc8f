import { randomBytes } from 'node:crypto';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';

/**
 * The hostile suite's own clients: HTTP through node:http (any method, any Host/Origin, raw body bytes),
 * raw TCP for what node:http refuses to send (NUL in a path, half a request line), a raw WebSocket
 * handshake and frame codec (half frames, reserved bits, unmasked frames), and a recording WebSocket
 * client on the `ws` library for the frame sweep. None of them throws on a hostile answer: every outcome
 * is returned as data for the oracle.
 */

export interface HttpReq {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface HttpRes {
  /** The HTTP status; 0 when the transport failed (see `error`), -1 when nothing came back in time. */
  status: number;
  headers: IncomingHttpHeaders | Record<string, string>;
  text: string;
  json: unknown;
  error?: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export function closeAgent(): void {
  agent.destroy();
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * One request. A keep-alive connection the server closed for idleness just as we reused it fails with
 * ECONNRESET before the server read anything; as Node's documentation advises, that one case is retried
 * once on a fresh connection (a reset the server causes happens again there, and is reported).
 */
export async function httpSend(port: number, req: HttpReq, timeoutMs = 30_000): Promise<HttpRes> {
  const first = await httpSendOnce(port, req, timeoutMs, true);
  if (first.staleReuse) return httpSendOnce(port, req, timeoutMs, false);
  return first;
}

function httpSendOnce(port: number, req: HttpReq, timeoutMs: number, pooled: boolean): Promise<HttpRes & { staleReuse?: boolean }> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: HttpRes & { staleReuse?: boolean }): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const headers: Record<string, string> = { ...req.headers };
    if (req.body) headers['Content-Length'] = String(req.body.length);
    let r: ReturnType<typeof request>;
    try {
      r = request({ host: '127.0.0.1', port, method: req.method, path: req.path, headers, setHost: false, agent: pooled ? agent : false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          finish({ status: res.statusCode ?? 0, headers: res.headers, text, json: parseJson(text) });
        });
        res.on('error', (e) => finish({ status: res.statusCode ?? 0, headers: res.headers, text: '', json: undefined, error: `response: ${e.message}` }));
      });
    } catch (err) {
      // node:http refused to send it (an invalid header value): the generator's fault, never the server's.
      resolve({ status: 0, headers: {}, text: '', json: undefined, error: `client refused: ${(err as Error).message}` });
      return;
    }
    const timer = setTimeout(() => {
      finish({ status: -1, headers: {}, text: '', json: undefined, error: `no answer within ${timeoutMs} ms` });
      r.destroy();
    }, timeoutMs);
    r.on('error', (e: NodeJS.ErrnoException) =>
      finish({ status: 0, headers: {}, text: '', json: undefined, error: `${e.code ?? 'error'}: ${e.message}`, staleReuse: r.reusedSocket && e.code === 'ECONNRESET' }),
    );
    r.end(req.body);
  });
}

/** An HTTP response read off a raw socket. */
export interface RawHttpRes {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  text: string;
  json: unknown;
  /** Bytes after the response (WebSocket frames after a 101). */
  rest: Buffer;
}

export function parseHttpResponse(buf: Buffer): RawHttpRes | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]);
  if (!m) return null;
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const status = Number(m[1]);
  let body: Buffer;
  let rest: Buffer;
  const after = buf.subarray(end + 4);
  if (status === 101) {
    body = Buffer.alloc(0);
    rest = after;
  } else if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (after.length < n) return null;
    body = after.subarray(0, n);
    rest = after.subarray(n);
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const parts: Buffer[] = [];
    let pos = 0;
    for (;;) {
      const eol = after.indexOf('\r\n', pos);
      if (eol < 0) return null;
      const size = parseInt(after.subarray(pos, eol).toString('latin1'), 16);
      if (!Number.isFinite(size)) break;
      if (size === 0) {
        pos = eol + 4;
        break;
      }
      if (after.length < eol + 2 + size) return null;
      parts.push(after.subarray(eol + 2, eol + 2 + size));
      pos = eol + 2 + size + 2;
    }
    body = Buffer.concat(parts);
    rest = after.subarray(Math.min(pos, after.length));
  } else {
    body = after;
    rest = Buffer.alloc(0);
  }
  const text = body.toString('utf8');
  return { status, headers, body, text, json: parseJson(text), rest };
}

export interface RawOutcome {
  data: Buffer;
  /** The server closed (or reset) the connection before our deadline. */
  closedByServer: boolean;
  error?: string;
}

/**
 * Writes `chunks` to a fresh TCP connection and collects what comes back until the server closes or
 * `waitMs` pass (then we close). With `untilResponse`, stops as soon as a whole HTTP response arrived.
 */
export function rawExchange(port: number, chunks: (Buffer | string)[], opts: { waitMs: number; untilResponse?: boolean }): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let done = false;
    const finish = (closedByServer: boolean, error?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ data, closedByServer, error });
    };
    s.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      if (opts.untilResponse && parseHttpResponse(data)) finish(false);
    });
    s.on('error', (e: NodeJS.ErrnoException) => finish(true, e.code ?? e.message));
    s.on('close', () => finish(true));
    const timer = setTimeout(() => finish(false), opts.waitMs);
    s.on('connect', () => {
      for (const c of chunks) s.write(c);
    });
  });
}

/** A raw TCP connection we keep open (a stall), with what it has received so far. */
export interface Held {
  socket: Socket;
  received(): Buffer;
  closedByServer(): boolean;
  release(): void;
}

export function hold(port: number, first: (Buffer | string)[]): Promise<Held> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let closed = false;
    s.on('data', (d: Buffer) => (data = Buffer.concat([data, d])));
    s.on('error', () => (closed = true));
    s.on('close', () => (closed = true));
    s.once('connect', () => {
      for (const c of first) s.write(c);
      resolve({ socket: s, received: () => data, closedByServer: () => closed, release: () => s.destroy() });
    });
    s.once('error', reject);
  });
}

// ---------------------------------------------------------------- raw WebSocket

export const wsKey = (): string => randomBytes(16).toString('base64');

export function upgradeRequest(path: string, headers: Record<string, string>, opts: { method?: string; key?: string | null; version?: string | null } = {}): string {
  const lines = [`${opts.method ?? 'GET'} ${path} HTTP/1.1`];
  const all: Record<string, string> = { Upgrade: 'websocket', Connection: 'Upgrade', ...headers };
  if (opts.key !== null) all['Sec-WebSocket-Key'] = opts.key ?? wsKey();
  if (opts.version !== null) all['Sec-WebSocket-Version'] = opts.version ?? '13';
  for (const [k, v] of Object.entries(all)) lines.push(`${k}: ${v}`);
  return lines.join('\r\n') + '\r\n\r\n';
}

export interface WsFrameSpec {
  fin?: boolean;
  rsv?: number;
  opcode: number;
  payload?: Buffer;
  mask?: boolean;
  /** Claim this payload length in the header regardless of the bytes that follow (half frames). */
  claimLength?: number | bigint;
}

export function encodeFrame(f: WsFrameSpec): Buffer {
  const payload = f.payload ?? Buffer.alloc(0);
  const len = f.claimLength ?? payload.length;
  const mask = f.mask !== false;
  const head: number[] = [((f.fin === false ? 0 : 1) << 7) | ((f.rsv ?? 0) << 4) | (f.opcode & 0x0f)];
  let ext = Buffer.alloc(0);
  const n = typeof len === 'bigint' ? len : BigInt(len);
  if (n < 126n) head.push((mask ? 0x80 : 0) | Number(n));
  else if (n < 65536n) {
    head.push((mask ? 0x80 : 0) | 126);
    ext = Buffer.alloc(2);
    ext.writeUInt16BE(Number(n));
  } else {
    head.push((mask ? 0x80 : 0) | 127);
    ext = Buffer.alloc(8);
    ext.writeBigUInt64BE(n);
  }
  if (!mask) return Buffer.concat([Buffer.from(head), ext, payload]);
  const key = randomBytes(4);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i] ^= key[i % 4];
  return Buffer.concat([Buffer.from(head), ext, key, masked]);
}

export interface ServerFrame {
  fin: boolean;
  opcode: number;
  payload: Buffer;
}

/** Decodes the server's (unmasked) frames; stops at an incomplete one. */
export function decodeFrames(buf: Buffer): ServerFrame[] {
  const out: ServerFrame[] = [];
  let pos = 0;
  while (pos + 2 <= buf.length) {
    const b0 = buf[pos];
    const b1 = buf[pos + 1];
    let len = b1 & 0x7f;
    let p = pos + 2;
    if (len === 126) {
      if (p + 2 > buf.length) break;
      len = buf.readUInt16BE(p);
      p += 2;
    } else if (len === 127) {
      if (p + 8 > buf.length) break;
      len = Number(buf.readBigUInt64BE(p));
      p += 8;
    }
    if (b1 & 0x80) p += 4;
    if (p + len > buf.length) break;
    out.push({ fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload: buf.subarray(p, p + len) });
    pos = p + len;
  }
  return out;
}

export function closeCodeOf(frames: ServerFrame[]): number | null {
  const c = frames.find((f) => f.opcode === 0x8);
  if (!c) return null;
  return c.payload.length >= 2 ? c.payload.readUInt16BE(0) : 1005;
}

// ---------------------------------------------------------------- recording WebSocket client

export interface RecFrame {
  text?: string;
  json?: any;
  binary?: Buffer;
}

export interface OpenFailure {
  status: number;
  headers: Record<string, unknown>;
  body: string;
  error?: string;
}

/** A WebSocket that records every frame and its close; `open` resolves with the refusal instead of throwing. */
export class Sock {
  readonly frames: RecFrame[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
      if (isBinary) this.frames.push({ binary: buf });
      else {
        const text = buf.toString('utf8');
        this.frames.push({ text, json: parseJson(text) });
      }
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
    ws.on('error', () => this.wake());
  }

  static open(url: string, headers: Record<string, string>, timeoutMs = 15_000): Promise<{ sock: Sock } | { failure: OpenFailure }> {
    return new Promise((resolve) => {
      const ws = new WebSocket(url, { headers, handshakeTimeout: timeoutMs, maxPayload: 64 * 1024 * 1024 });
      const sock = new Sock(ws);
      let settled = false;
      const settle = (v: { sock: Sock } | { failure: OpenFailure }): void => {
        if (!settled) {
          settled = true;
          resolve(v);
        }
      };
      ws.once('open', () => settle({ sock }));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString('utf8')));
        res.on('end', () => settle({ failure: { status: res.statusCode ?? 0, headers: res.headers, body } }));
        res.on('error', () => settle({ failure: { status: res.statusCode ?? 0, headers: res.headers, body } }));
      });
      ws.once('error', (err) => settle({ failure: { status: 0, headers: {}, body: '', error: err.message } }));
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f());
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Index of the first frame at or after `from` satisfying `pred`; -1 if the socket closed first, -2 on timeout. */
  async waitFor(pred: (f: RecFrame) => boolean, from = 0, timeoutMs = 15_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let i = from;
    for (;;) {
      for (; i < this.frames.length; i++) if (pred(this.frames[i])) return i;
      if (this.closed) return -1;
      const left = deadline - Date.now();
      if (left <= 0) return -2;
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  async waitClose(timeoutMs = 10_000): Promise<{ code: number; reason: string } | null> {
    await this.waitFor(() => false, this.frames.length, timeoutMs);
    return this.closed;
  }

  send(data: string | Buffer, binary?: boolean): void {
    if (this.isOpen) this.ws.send(data, { binary: binary ?? typeof data !== 'string' });
  }

  close(): void {
    try {
      this.ws.close();
    } catch {
      // already gone
    }
  }

  terminate(): void {
    try {
      this.ws.terminate();
    } catch {
      // already gone
    }
  }
}

export interface UpgradeOutcome {
  /** The HTTP answer to the upgrade request, if one arrived. */
  response: RawHttpRes | null;
  /** Frames after a 101. */
  frames: ServerFrame[];
  closedByServer: boolean;
  error?: string;
}

/**
 * Sends an upgrade request on a raw socket. A refusal is read whole; after a 101 the server's first frames
 * are collected until `settle` says enough (or `frameWaitMs` pass), then we send a close and hang up.
 */
export function upgradeExchange(
  port: number,
  request: string,
  opts: { timeoutMs?: number; frameWaitMs?: number; settle?: (frames: ServerFrame[]) => boolean } = {},
): Promise<UpgradeOutcome> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let response: RawHttpRes | null = null;
    let done = false;
    let frameTimer: NodeJS.Timeout | null = null;
    const finish = (closedByServer: boolean, error?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (frameTimer) clearTimeout(frameTimer);
      if (!response) response = parseHttpResponse(data);
      const frames = response && response.status === 101 ? decodeFrames(data.subarray(data.indexOf('\r\n\r\n') + 4)) : [];
      if (!closedByServer && response?.status === 101) {
        try {
          s.write(encodeFrame({ opcode: 0x8, payload: Buffer.from([0x03, 0xe8]) }));
        } catch {
          // gone
        }
      }
      s.destroy();
      resolve({ response, frames, closedByServer, error });
    };
    const timer = setTimeout(() => finish(false, response ? undefined : 'no answer'), opts.timeoutMs ?? 10_000);
    s.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      if (!response) {
        response = parseHttpResponse(data);
        if (response && response.status !== 101) return finish(false);
        if (response) {
          frameTimer = setTimeout(() => finish(false), opts.frameWaitMs ?? 400);
        }
      }
      if (response?.status === 101 && opts.settle) {
        const frames = decodeFrames(data.subarray(data.indexOf('\r\n\r\n') + 4));
        if (opts.settle(frames)) finish(false);
      }
    });
    s.on('error', (e: NodeJS.ErrnoException) => finish(true, e.code ?? e.message));
    s.on('close', () => finish(true));
    s.on('connect', () => s.write(request));
  });
}
