import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { ServerConfig } from '../config';
import type { CreateRequest, SessionManager } from '../terminal/manager';
import type { PersonPresence } from '../presence';
import { RateLimiter } from './rate-limit';
import type { Session } from '../terminal/session';
import { type Principal, type TokenStore } from './auth';
import { ApiError, dialectOf, renderError, toApiError, type Dialect } from './errors';
import { authenticate, checkHostAndOrigin, checkViewerOrigin, type Authenticated, type Credentials, type GuardConfig } from './guards';
import type { ViewerLogins } from './viewer-login';
import { SocketRegistry } from './sockets';
import type { RemoteStatus, SessionSummary, ViewerEvent } from '../../shared/types';
import { ConnectionGate } from './connection-gate';

export const HttpConstants = {
  /** An idle keep-alive connection is closed after this; a client that comes back opens a new one. */
  KeepAliveTimeoutMs: 5_000,
  /** How often Node checks the header and body deadlines, at the most (a quarter of the shorter deadline otherwise). */
  MinCheckIntervalMs: 250,
} as const;

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
    /** How the principal proved itself: a token, or the viewer's session (cookie and page-held key). */
    credential: 'token' | 'viewer';
  }
}

/** What every door gets: the core, the credentials, and helpers that apply ownership the same way everywhere. */
export interface ApiContext {
  manager: SessionManager;
  tokens: TokenStore;
  /** The person's viewer logins: one-time codes and viewer sessions. */
  logins: ViewerLogins;
  config: ServerConfig;
  sockets: SocketRegistry;
  guard: GuardConfig;
  /** The person's open viewer connections (the viewer's sockets enter it; the deck's floor lease reads it). */
  presence: PersonPresence;
  /** http://host:port once listening. */
  baseUrl(): string;
  /** The session if `principal` may see it; another agent's session is reported missing, never forbidden. */
  sessionFor(principal: Principal, id: string, dialect: Dialect): Session;
  visibleSessions(principal: Principal): Session[];
  canSee(principal: Principal, session: Session): boolean;
  /** Every door creates sessions through here: the creator owns them, at a bounded rate. */
  createSession(principal: Principal, req: Omit<CreateRequest, 'owner'>): Promise<{ session: Session; created: boolean }>;
  /** Sessions that live on other servers (remotes/), shown to the person beside the local ones. */
  elsewhere: SessionsElsewhere | null;
}

/**
 * Sessions the person sees that are not this server's own: another ptydeck's or an AIO sandbox's
 * terminals (src/main/remotes). Their ids name their host (`host/id`; a local id never holds a `/`).
 * Every /api/sessions/{id}/... route and the view socket ask `route(id)` first and hand the request over
 * when it answers; listings add `list()`; the events socket forwards what `watch` reports. None of these
 * waits on a remote: a remote that is down or slow costs the local listing nothing.
 */
export interface SessionsElsewhere {
  list(): SessionSummary[];
  remotes(): RemoteStatus[];
  route(id: string): ElsewhereRoute | null;
  watch(listener: (e: Extract<ViewerEvent, { type: 'session' | 'closed' | 'remotes' }>) => void): () => void;
}

export interface ElsewhereRoute {
  /** Answers a request to /api/sessions/{id}[/...] for this session (the person's credential only):
   *  returns the body (having set the status on `reply` when it is not 200), or throws an ApiError. */
  http(req: FastifyRequest, reply: FastifyReply): Promise<unknown>;
  /** Serves the view socket for this session. */
  view(up: UpgradeRequest): Promise<void>;
}

export interface UpgradeRequest {
  req: IncomingMessage;
  principal: Principal;
  credential: 'token' | 'viewer';
  params: Record<string, string>;
  query: URLSearchParams;
  /** Completes the WebSocket handshake. */
  accept(): Promise<WebSocket>;
  /** Answers with a plain HTTP error instead of upgrading. */
  reject(err: ApiError): void;
}

export interface WsRoute {
  /** Path pattern with :params, e.g. /v2/pty/sessions/:id/ws */
  path: string;
  /** Which credential carriers apply (execd's header on its own door). */
  execd?: boolean;
  handle(up: UpgradeRequest): void | Promise<void>;
}

export interface Door {
  register(app: FastifyInstance, ctx: ApiContext): void;
  wsRoutes?(ctx: ApiContext): WsRoute[];
  /** A feature that answers for sessions on other servers (at most one: remotes/). */
  elsewhere?: SessionsElsewhere;
}

/** Routes anyone may call without a credential. */
const PUBLIC = [/^\/health$/, /^\/v1\/ping$/, /^\/$/, /^\/terminal$/, /^\/assets\//, /^\/favicon\.(ico|svg)$/, /^\/api\/login$/];

export function notFoundMessage(dialect: Dialect, id: string): string {
  if (dialect === 'execd') return `pty session ${id} not found`;
  if (dialect === 'aio') return 'Session not found';
  return `Session ${id} not found`;
}

export interface RunningServer {
  app: FastifyInstance;
  server: Server;
  ctx: ApiContext;
  port: number;
  url: string;
  close(): Promise<void>;
}

export async function startServer(opts: { manager: SessionManager; tokens: TokenStore; logins: ViewerLogins; config: ServerConfig; doors: Door[]; presence: PersonPresence }): Promise<RunningServer> {
  const { manager, tokens, logins, config } = opts;
  let port = config.port;
  const guard: GuardConfig = { port: () => port, bindHost: config.host, allowedHosts: config.allowedHosts, tls: config.tls !== null };
  const sockets = new SocketRegistry(config.limits.socketsPerPrincipal);
  const canSee = (p: Principal, s: Session): boolean => p.kind === 'admin' || s.owner === p.name;
  const creations = new RateLimiter(config.limits.createsPerMinute);
  const credentials: Credentials = { tokens, logins, port: () => port };
  const ctx: ApiContext = {
    manager,
    tokens,
    logins,
    config,
    sockets,
    guard,
    presence: opts.presence,
    baseUrl: () => `${config.tls ? 'https' : 'http'}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    canSee,
    elsewhere: opts.doors.find((d) => d.elsewhere)?.elsewhere ?? null,
    visibleSessions: (p) => manager.list().filter((s) => canSee(p, s)),
    createSession: async (p, req) => {
      const existing = req.id ? manager.get(req.id) : undefined;
      // Asking again for an existing id creates nothing, so it costs nothing.
      if (!existing || existing.owner !== p.name) {
        const verdict = creations.take(p.name);
        if (!verdict.ok) {
          throw new ApiError(429, `Too many sessions created by ${p.name}: the limit is ${config.limits.createsPerMinute} per minute; retry in ${verdict.retryAfterSecs}s`, 'RATE_LIMITED');
        }
      }
      // The person's own terminal takes their keys from the start; an agent's starts watched.
      return manager.create({ floor: p.kind === 'admin' ? 'type' : 'watch', ...req, owner: p.name });
    },
    sessionFor: (p, id, dialect) => {
      const s = manager.get(id);
      if (!s || !canSee(p, s)) throw new ApiError(404, notFoundMessage(dialect, id), 'NOT_FOUND');
      return s;
    },
  };

  /** Host, Origin, then the credential (none needed on public routes): the order every request meets. */
  const guardRequest = (raw: IncomingMessage): Authenticated | null => {
    checkHostAndOrigin(raw, guard);
    const path = (raw.url ?? '/').split('?')[0];
    if (PUBLIC.some((re) => re.test(path))) return null;
    const auth = authenticate(raw, credentials, { upgrade: false, execd: dialectOf(path) === 'execd' });
    checkViewerOrigin(raw, auth, { upgrade: false });
    return auth;
  };

  let httpServer!: Server;
  const gate = new ConnectionGate(config.limits.unauthenticatedConnections);
  const app = Fastify({
    logger: false,
    bodyLimit: config.limits.bodyBytes,
    routerOptions: { maxParamLength: 256 },
    serverFactory: (handler) => {
      const options = {
        maxHeaderSize: 16 * 1024,
        // No Host at all is answered by our guard (403, with a message), not by Node's bare 400.
        requireHostHeader: false,
        // Node's requestTimeout covers receiving the request (headers and body) and stops once the
        // request is in: a slow body is cut with 408, a long exec's answer is never cut.
        headersTimeout: config.limits.headersTimeoutMs,
        requestTimeout: config.limits.bodyTimeoutMs,
        keepAliveTimeout: HttpConstants.KeepAliveTimeoutMs,
        connectionsCheckingInterval: Math.max(HttpConstants.MinCheckIntervalMs, Math.min(config.limits.headersTimeoutMs, config.limits.bodyTimeoutMs) / 4),
      };
      // HTTPS and WSS with the person's certificate (--tls-cert/--tls-key); the same server otherwise.
      // A silent TCP connection gets no longer to finish its TLS handshake than to send its headers.
      const tlsOptions = config.tls ? { ...options, cert: config.tls.cert, key: config.tls.key, handshakeTimeout: config.limits.headersTimeoutMs } : null;
      httpServer = tlsOptions ? (createTlsServer(tlsOptions, handler) as unknown as Server) : createServer(options, handler);
      // A TLS server reports the raw socket on 'connection' and the TLS one on requests. Both count: a
      // socket mid-handshake (or one that never starts it) has shown no credential either. Once TLS is
      // up, the TLS socket takes its raw socket's place.
      httpServer.on('connection', (sock: Socket) => gate.opened(sock));
      if (config.tls) httpServer.on('secureConnection', (sock: Socket) => gate.replaced(sock));
      httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => gate.requestStarted(req.socket, (end) => res.once('close', end)));
      return httpServer;
    },
    // Errors the router raises before any hook runs (malformed percent-encoding, an over-long path
    // parameter) still pass the Host and Origin guards and are answered in the door's dialect.
    frameworkErrors: (err, req, reply) => {
      let api: ApiError;
      try {
        guardRequest(req.raw);
        api = toApiError(err);
      } catch (guardErr) {
        api = toApiError(guardErr);
      }
      (reply as FastifyReply).code(api.status).send(renderError(dialectOf(req.url), api));
    },
  });

  // Agents send JSON with any content type (curl -d sends form encoding); an empty body is {}.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body: Buffer, done) => {
    if (body.length === 0) return done(null, undefined);
    const text = body.toString('utf8');
    if (!text.trim()) return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(invalidJson(dialectOf(req.url), err as Error), undefined);
    }
  });

  app.addHook('onRequest', async (req: FastifyRequest) => {
    const auth = guardRequest(req.raw);
    if (auth) {
      req.principal = auth.principal;
      req.credential = auth.via;
      gate.authenticated(req.raw.socket);
    }
  });

  app.addHook('onSend', async (_req, reply, payload) => {
    // No CORS, no sniffing, no framing by other sites.
    reply.header('X-Content-Type-Options', 'nosniff');
    if (!reply.hasHeader('Cache-Control')) reply.header('Cache-Control', 'no-store');
    reply.header('X-Frame-Options', 'DENY');
    return payload;
  });

  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const api = toApiError(err);
    // A 502/504 is another server's failure (a remote's), already explained in the answer.
    if (api.status === 500) console.error(`ptydeck: ${req.method} ${req.url.split('?')[0]} failed:`, err);
    void reply.code(api.status).send(renderError(dialectOf(req.url), api));
  });

  const routes = opts.doors.flatMap((d) => d.wsRoutes?.(ctx) ?? []).map((r) => ({ ...r, match: compilePath(r.path) }));
  /** The methods a path answers to: its HTTP routes', and GET where a WebSocket route lives. */
  const allowedMethods = (path: string): string[] => {
    const methods = ROUTE_METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
    if (!methods.includes('GET') && routes.some((r) => r.match(path))) methods.push('GET');
    return methods;
  };

  app.setNotFoundHandler((req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0];
    const allowed = allowedMethods(path);
    let api: ApiError;
    if (allowed.includes(req.method)) {
      // Only a WebSocket route gets here with its own method: a plain request without the upgrade.
      api = new ApiError(400, `${path} needs a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)`, 'INVALID_REQUEST');
    } else if (allowed.length) {
      // A known route asked with the wrong method: 405 and what it does accept, as strict HTTP clients expect.
      void reply.header('Allow', allowed.join(', '));
      api = new ApiError(405, `Method ${req.method} is not allowed on ${path}; it accepts ${allowed.join(', ')}`, 'METHOD_NOT_ALLOWED');
    } else api = new ApiError(404, `No route ${req.method} ${path}`, 'NOT_FOUND');
    void reply.code(api.status).send(renderError(dialectOf(req.url), api));
  });

  for (const door of opts.doors) door.register(app, ctx);
  await app.ready();

  const wss = new WebSocketServer({ noServer: true, maxPayload: config.limits.wsFrameBytes, perMessageDeflate: false });
  // A handshake the ws library refuses after our checks is answered in our shape too, and whoever
  // waits on that accept learns it failed (so an anonymous session made for it is closed again).
  const pendingAccepts = new WeakMap<Duplex, (err: Error) => void>();
  wss.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) => {
    rejectUpgrade(socket, new ApiError(400, `WebSocket handshake refused: ${err.message}`, 'INVALID_REQUEST'), dialectOf(req.url ?? '/'));
    pendingAccepts.get(socket)?.(err);
  });
  httpServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    const dialect = dialectOf(path);
    const refuse = (err: ApiError): void => rejectUpgrade(socket, err, dialect);
    try {
      checkHostAndOrigin(req, guard);
      const auth = authenticate(req, credentials, { upgrade: true, execd: dialect === 'execd' });
      checkViewerOrigin(req, auth, { upgrade: true });
      const principal = auth.principal;
      gate.authenticated(req.socket);
      const problem = handshakeProblem(req);
      if (problem) return refuse(new ApiError(400, `WebSocket handshake refused: ${problem}`, 'INVALID_REQUEST'));
      const route = routes.find((r) => r.match(path));
      if (!route) return refuse(new ApiError(404, `No WebSocket route ${path}`, 'NOT_FOUND'));
      if (!sockets.canOpen(principal)) return refuse(new ApiError(429, `Too many open sockets for ${principal.name} (limit ${config.limits.socketsPerPrincipal}); close some first`, 'RATE_LIMITED'));
      let settled = false;
      const up: UpgradeRequest = {
        req,
        principal,
        credential: auth.via,
        params: route.match(path)!,
        query: url.searchParams,
        accept: () =>
          new Promise<WebSocket>((resolve, reject) => {
            settled = true;
            const failed = (err: Error): void => {
              pendingAccepts.delete(socket);
              reject(err);
            };
            pendingAccepts.set(socket, failed);
            socket.once('close', () => failed(new Error('the client went away during the handshake')));
            wss.handleUpgrade(req, socket, head, (ws) => {
              pendingAccepts.delete(socket);
              // A protocol violation (bad UTF-8, an oversized or malformed frame) makes ws close the
              // socket with the right code and then emit 'error': that must not reach the process.
              ws.on('error', () => undefined);
              sockets.add(principal, ws);
              resolve(ws);
            });
          }),
        reject: (err) => {
          settled = true;
          refuse(err);
        },
      };
      Promise.resolve(route.handle(up)).catch((err) => {
        if (!settled) refuse(toApiError(err));
        else console.error('ptydeck: websocket handler failed:', err);
      });
    } catch (err) {
      refuse(toApiError(err));
    }
  });

  // Requests the HTTP parser refuses (oversized headers or URL, malformed request lines) still get a
  // clear answer in our error shape, instead of a dropped connection.
  httpServer.removeAllListeners('clientError');
  httpServer.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || (err.code === 'ECONNRESET' && !socket.readable)) return socket.destroy();
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const api = tooLarge
      ? new ApiError(431, 'Request headers (or the URL) are larger than 16 KiB', 'HEADERS_TOO_LARGE')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT'
        ? new ApiError(408, 'The request did not arrive in time', 'TIMEOUT')
        : new ApiError(400, `Malformed HTTP request (${err.code ?? 'parse error'})`, 'INVALID_REQUEST');
    const body = JSON.stringify(renderError('native', api));
    const reason = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[api.status] ?? 'Error';
    socket.end(`HTTP/1.1 ${api.status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });

  const revokeUnsub = tokens.watch((name) => sockets.closePrincipal(name, 4003, 'token revoked'));

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(config.port, config.host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const addr = httpServer.address();
  port = typeof addr === 'object' && addr ? addr.port : config.port;

  return {
    app,
    server: httpServer,
    ctx,
    port,
    url: ctx.baseUrl(),
    close: async () => {
      revokeUnsub();
      logins.dispose();
      sockets.closeAll(1001, 'server shutting down');
      wss.close();
      await app.close();
      // Fastify closes only a server it started listening itself: stop listening, so the same port can
      // be served again in this process (a restart in place), and drop idle keep-alive connections.
      await new Promise<void>((resolve) => {
        if (!httpServer.listening) return resolve();
        httpServer.close(() => resolve());
        httpServer.closeIdleConnections();
      });
    },
  };
}

/** The methods a 405 may list (HEAD comes with every GET route). */
const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * A body that is not JSON. AIO's routes answer it as FastAPI does, 422 with a `json_invalid` entry in
 * `detail` (its SDKs read that list); the other doors answer 400.
 */
function invalidJson(dialect: Dialect, err: Error): ApiError {
  const message = `Request body is not valid JSON: ${err.message}`;
  if (dialect !== 'aio') return new ApiError(400, message, 'INVALID_REQUEST_BODY');
  const at = /position (\d+)/.exec(err.message);
  return new ApiError(422, message, 'VALIDATION_ERROR', [{ loc: ['body', at ? Number(at[1]) : 0], msg: 'JSON decode error', type: 'json_invalid' }]);
}

function compilePath(pattern: string): (path: string) => Record<string, string> | null {
  const keys: string[] = [];
  const re = new RegExp(
    '^' +
      pattern
        .split('/')
        .map((seg) => {
          if (seg.startsWith(':')) {
            keys.push(seg.slice(1));
            return '([^/]+)';
          }
          return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        })
        .join('/') +
      '$',
  );
  return (path) => {
    const m = re.exec(path);
    if (!m) return null;
    const params: Record<string, string> = {};
    keys.forEach((k, i) => {
      try {
        params[k] = decodeURIComponent(m[i + 1]);
      } catch {
        params[k] = m[i + 1];
      }
    });
    return params;
  };
}

/** What the ws library would refuse in a handshake, checked before any route (or session) is touched. */
function handshakeProblem(req: IncomingMessage): string | null {
  if (req.method !== 'GET') return `upgrades must use GET, not ${req.method}`;
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return 'the Upgrade header must be "websocket"';
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string' || !/^[+/0-9A-Za-z]{22}==$/.test(key)) return 'missing or invalid Sec-WebSocket-Key header';
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return 'missing or invalid Sec-WebSocket-Version header (13 is supported)';
  return null;
}

function rejectUpgrade(socket: Duplex, err: ApiError, dialect: Dialect): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(renderError(dialect, err));
  const reason = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 429: 'Too Many Requests', 503: 'Service Unavailable' }[err.status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${err.status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
