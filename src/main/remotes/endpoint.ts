import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import WebSocket, { type RawData } from 'ws';

/**
 * How the deck talks to one remote: its base URL, its token (sent only as a header, never in a URL, so
 * no error message or proxy log can carry it), an optional CA to trust, and one keep-alive agent so
 * many calls share few connections. Every call has a timeout: a slow remote costs its own callers time,
 * never the deck's.
 */
export const RemoteTiming = {
  /** A WebSocket handshake (events, view, AIO terminal) that has not completed by then has failed. */
  HandshakeMs: 5000,
  /** Plain calls (floor, interrupt, listing, screen): a person is waiting on a button. */
  RequestMs: 10_000,
  /** A call that waits on the remote by design (send, exec) gets its own timeout plus this. */
  LongCallMarginMs: 15_000,
  /** Sockets per remote: enough for a deck's worth of parallel calls, bounded against a hostile one. */
  MaxSockets: 16,
} as const;

/** A remote's answer larger than this is refused: a hostile or broken remote cannot fill the deck's memory. */
export const MaxResponseBytes = 16 * 1024 * 1024;
/** The largest frame accepted from a remote's socket (a view snapshot is at most a few MiB). */
export const MaxRemoteFrameBytes = 32 * 1024 * 1024;

export class RemoteUnreachableError extends Error {
  constructor(
    message: string,
    /** 504 when it did not answer in time, 502 when it could not be reached or answered nonsense. */
    readonly status: 502 | 504 = 502,
  ) {
    super(message);
  }
}

export interface RemoteAnswer {
  status: number;
  body: unknown;
}

export class RemoteEndpoint {
  readonly base: URL;
  private readonly agent: HttpAgent | HttpsAgent;

  constructor(
    url: string,
    private readonly token: string,
    private readonly ca?: string,
  ) {
    this.base = new URL(url);
    const opts = { keepAlive: true, maxSockets: RemoteTiming.MaxSockets };
    this.agent = this.tls ? new HttpsAgent({ ...opts, ...(ca ? { ca: [ca] } : {}) }) : new HttpAgent(opts);
  }

  get tls(): boolean {
    return this.base.protocol === 'https:';
  }

  /** `path` is absolute under the remote's base (which may carry a reverse proxy's prefix). */
  url(path: string): URL {
    const u = new URL(this.base.href);
    const [p, q] = path.split('?');
    u.pathname = this.base.pathname.replace(/\/+$/, '') + p;
    u.search = q ? `?${q}` : '';
    return u;
  }

  request(method: string, path: string, body?: unknown, timeoutMs: number = RemoteTiming.RequestMs): Promise<RemoteAnswer> {
    const url = this.url(path);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<RemoteAnswer>((resolve, reject) => {
      const req = (this.tls ? httpsRequest : httpRequest)(
        url,
        {
          method,
          agent: this.agent,
          headers: {
            Authorization: `Bearer ${this.token}`,
            Accept: 'application/json',
            ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) } : {}),
          },
        },
        (res) => collect(res, resolve, reject),
      );
      req.setTimeout(timeoutMs, () => req.destroy(new RemoteUnreachableError(`no answer within ${Math.round(timeoutMs / 1000)} s`, 504)));
      req.on('error', (err) => reject(err instanceof RemoteUnreachableError ? err : new RemoteUnreachableError(describeNetError(err))));
      req.end(payload);
    });
  }

  /**
   * A GET whose answer is passed on as it arrives instead of collected (a session's recording, which may
   * be larger than MaxResponseBytes): resolves with the response once its head is in. `timeoutMs` is
   * the longest the remote may stay silent, before the head or between chunks.
   */
  stream(path: string, timeoutMs: number = RemoteTiming.RequestMs): Promise<IncomingMessage> {
    const url = this.url(path);
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = (this.tls ? httpsRequest : httpRequest)(url, { method: 'GET', agent: this.agent, headers: { Authorization: `Bearer ${this.token}` } }, resolve);
      req.setTimeout(timeoutMs, () => req.destroy(new RemoteUnreachableError(`no answer within ${Math.round(timeoutMs / 1000)} s`, 504)));
      req.on('error', (err) => reject(err instanceof RemoteUnreachableError ? err : new RemoteUnreachableError(describeNetError(err))));
      req.end();
    });
  }

  /** The answer to a stream() that is not passed on (an error), collected under the usual bound. */
  static collect(res: IncomingMessage): Promise<RemoteAnswer> {
    return new Promise<RemoteAnswer>((resolve, reject) => collect(res, resolve, reject));
  }

  /**
   * Opens a WebSocket to `path` with the token in a header; resolves once open, rejects with the reason.
   * Frames that arrive before the caller calls `listen` are kept for it (the first one may come in the
   * same packet as the handshake).
   */
  socket(path: string): Promise<RemoteSocket> {
    const url = this.url(path);
    url.protocol = this.tls ? 'wss:' : 'ws:';
    return new Promise<RemoteSocket>((resolve, reject) => {
      const ws = new WebSocket(url, {
        headers: { Authorization: `Bearer ${this.token}` },
        handshakeTimeout: RemoteTiming.HandshakeMs,
        maxPayload: MaxRemoteFrameBytes,
        perMessageDeflate: false,
        followRedirects: false,
        ...(this.ca ? { ca: [this.ca] } : {}),
      });
      const early: [RawData, boolean][] = [];
      const keep = (data: RawData, isBinary: boolean): void => void early.push([data, isBinary]);
      ws.on('message', keep);
      let settled = false;
      const fail = (err: Error): void => {
        if (settled) return;
        settled = true;
        ws.removeAllListeners('open');
        ws.on('error', () => undefined);
        ws.terminate();
        reject(err);
      };
      ws.once('open', () => {
        settled = true;
        resolve({
          ws,
          listen: (onMessage) => {
            ws.off('message', keep);
            ws.on('message', onMessage);
            for (const [data, isBinary] of early.splice(0)) onMessage(data, isBinary);
          },
        });
      });
      ws.once('unexpected-response', (_req, res) => {
        collect(
          res,
          (answer) => fail(new RemoteRefusedError(answer.status, errorMessage(answer.body) ?? `HTTP ${answer.status}`)),
          (err) => fail(err),
        );
      });
      ws.once('error', (err) => fail(new RemoteUnreachableError(/timed? ?out/i.test(err.message) ? `no answer within ${RemoteTiming.HandshakeMs / 1000} s` : describeNetError(err))));
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface RemoteSocket {
  ws: WebSocket;
  /** Takes over the socket's frames, starting with any that arrived before. */
  listen(onMessage: (data: RawData, isBinary: boolean) => void): void;
}

/** The remote answered, and said no (401 bad token, 404 no such session, ...). */
export class RemoteRefusedError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function collect(res: IncomingMessage, resolve: (a: RemoteAnswer) => void, reject: (e: Error) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (c: Buffer) => {
    size += c.length;
    if (size > MaxResponseBytes) {
      res.destroy();
      reject(new RemoteUnreachableError(`answered with more than ${MaxResponseBytes / 1024 / 1024} MiB`));
      return;
    }
    chunks.push(c);
  });
  res.on('error', (err) => reject(new RemoteUnreachableError(describeNetError(err))));
  res.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON (a proxy's error page): keep the text
    }
    resolve({ status: res.statusCode ?? 0, body });
  });
}

/** The message of an error body in any of ptydeck's dialects (native, AIO, execd). */
export function errorMessage(body: unknown): string | null {
  if (!body || typeof body !== 'object') return typeof body === 'string' && body.trim() ? body.trim().slice(0, 300) : null;
  const b = body as { error?: { message?: unknown }; message?: unknown };
  if (typeof b.error?.message === 'string') return b.error.message;
  if (typeof b.message === 'string') return b.message;
  return null;
}

/** A network failure in words a person can act on. */
export function describeNetError(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused (is the server running there?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host name not found';
    case 'ETIMEDOUT':
      return 'the connection timed out';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'the connection was reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
      return `TLS: the remote's certificate is not trusted (${code}); add the remote with --ca CERT.pem`;
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return "TLS: the remote's certificate does not name this host";
    case 'CERT_HAS_EXPIRED':
      return "TLS: the remote's certificate has expired";
    case 'EPROTO':
    case 'ERR_SSL_WRONG_VERSION_NUMBER':
      return 'TLS handshake failed (is the remote really serving https?)';
  }
  return err.message.split('\n')[0] || 'unreachable';
}
