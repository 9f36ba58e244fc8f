import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { ServerConfig } from '../config';
import type { CreateRequest, SessionManager } from '../terminal/manager';
import type { PersonPresence } from '../presence';
import { RateLimiter } from './rate-limit';
import type { Session } from '../terminal/session';
import { type Principal, type TokenStore } from './auth';
import { ApiError, dialectOf, renderError, toApiError, type Dialect } from './errors';
import { authenticate, checkHostAndOrigin, type GuardConfig } from './guards';
import { SocketRegistry } from './sockets';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

/** What every door gets: the core, the credentials, and helpers that apply ownership the same way everywhere. */
export interface ApiContext {
  manager: SessionManager;
  tokens: TokenStore;
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
}

export interface UpgradeRequest {
  req: IncomingMessage;
  principal: Principal;
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

export async function startServer(opts: { manager: SessionManager; tokens: TokenStore; config: ServerConfig; doors: Door[]; presence: PersonPresence }): Promise<RunningServer> {
  const { manager, tokens, config } = opts;
  let port = config.port;
  const guard: GuardConfig = { port: () => port, bindHost: config.host, allowedHosts: config.allowedHosts };
  const sockets = new SocketRegistry(config.limits.socketsPerPrincipal);
  const canSee = (p: Principal, s: Session): boolean => p.kind === 'admin' || s.owner === p.name;
  const creations = new RateLimiter(config.limits.createsPerMinute);
  const ctx: ApiContext = {
    manager,
    tokens,
    config,
    sockets,
    guard,
    presence: opts.presence,
    baseUrl: () => `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    canSee,
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
  const guardRequest = (raw: IncomingMessage): Principal | null => {
    checkHostAndOrigin(raw, guard);
    const path = (raw.url ?? '/').split('?')[0];
    if (PUBLIC.some((re) => re.test(path))) return null;
    return authenticate(raw, tokens, { upgrade: false, execd: dialectOf(path) === 'execd' });
  };

  let httpServer!: Server;
  const app = Fastify({
    logger: false,
    bodyLimit: config.limits.bodyBytes,
    routerOptions: { maxParamLength: 256 },
    // Long synchronous execs are legitimate; slow headers are not (see headersTimeout below).
    requestTimeout: 0,
    serverFactory: (handler) => {
      // No Host at all is answered by our guard (403, with a message), not by Node's bare 400.
      httpServer = createServer({ maxHeaderSize: 16 * 1024, requireHostHeader: false }, handler);
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
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body: Buffer, done) => {
    if (body.length === 0) return done(null, undefined);
    const text = body.toString('utf8');
    if (!text.trim()) return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(new ApiError(400, `Request body is not valid JSON: ${(err as Error).message}`, 'INVALID_REQUEST_BODY'), undefined);
    }
  });

  app.addHook('onRequest', async (req: FastifyRequest) => {
    const principal = guardRequest(req.raw);
    if (principal) req.principal = principal;
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
    if (api.status >= 500) console.error(`ptydeck: ${req.method} ${req.url.split('?')[0]} failed:`, err);
    void reply.code(api.status).send(renderError(dialectOf(req.url), api));
  });

  app.setNotFoundHandler((req: FastifyRequest, reply: FastifyReply) => {
    const api = new ApiError(404, `No route ${req.method} ${req.url.split('?')[0]}`, 'NOT_FOUND');
    void reply.code(404).send(renderError(dialectOf(req.url), api));
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
  const routes = opts.doors.flatMap((d) => d.wsRoutes?.(ctx) ?? []).map((r) => ({ ...r, match: compilePath(r.path) }));
  httpServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    const dialect = dialectOf(path);
    const refuse = (err: ApiError): void => rejectUpgrade(socket, err, dialect);
    try {
      checkHostAndOrigin(req, guard);
      const principal = authenticate(req, tokens, { upgrade: true, execd: dialect === 'execd' });
      const problem = handshakeProblem(req);
      if (problem) return refuse(new ApiError(400, `WebSocket handshake refused: ${problem}`, 'INVALID_REQUEST'));
      const route = routes.find((r) => r.match(path));
      if (!route) return refuse(new ApiError(404, `No WebSocket route ${path}`, 'NOT_FOUND'));
      if (!sockets.canOpen(principal)) return refuse(new ApiError(429, `Too many open sockets for ${principal.name} (limit ${config.limits.socketsPerPrincipal}); close some first`, 'RATE_LIMITED'));
      let settled = false;
      const up: UpgradeRequest = {
        req,
        principal,
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
  // Slow-header (slowloris) connections are cut; a long exec response is not.
  httpServer.headersTimeout = 15_000;
  httpServer.keepAliveTimeout = 5_000;
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
      sockets.closeAll(1001, 'server shutting down');
      wss.close();
      await app.close();
    },
  };
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
