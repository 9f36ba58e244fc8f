import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { ApiError } from './errors';
import { ADMIN, AGENT_NAME_PATTERN, type Principal, type TokenStore } from './auth';
import type { ViewerLogins } from './viewer-login';

/**
 * The checks every request passes before any route sees it, HTTP and WebSocket alike:
 *   1. Host must name this server (a loopback name or address with our port, or a configured name):
 *      a DNS-rebinding page reaches us under its own domain name and is refused here.
 *   2. Origin, when a browser sends one, must be our own: a foreign page cannot drive our API or open
 *      our WebSockets with the person's cookie (browsers apply no CORS to WebSockets).
 *   3. A credential: Bearer, x-api-key, X-EXECD-ACCESS-TOKEN (execd door), ?api_key= (WebSocket upgrades
 *      only), or the viewer's session: its HttpOnly cookie together with the key the page holds
 *      (viewer-login.ts). A request that changes something on the viewer's session must also carry our
 *      Origin, which a browser always sends from our page and a forged request from elsewhere cannot.
 */
export interface GuardConfig {
  port: () => number;
  bindHost: string;
  /** Names the person configured (a reverse proxy's): `NAME` or `NAME:PORT`. */
  allowedHosts: string[];
  /** We serve HTTPS (our own origin is https://). */
  tls: boolean;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** The viewer's cookie is named for the port: two servers on one machine never overwrite each other's. */
export const viewerCookieName = (port: number): string => `ptydeck_viewer_${port}`;
/** Where the page sends its key: a header on HTTP, a query parameter on WebSocket upgrades (which carry no headers). */
export const VIEWER_KEY_HEADER = 'x-ptydeck-viewer-key';
export const VIEWER_KEY_QUERY = 'viewer_key';

function splitHostPort(value: string): { host: string; port: number | null } | null {
  const v = value.trim().toLowerCase();
  if (!v) return null;
  if (v.startsWith('[')) {
    const end = v.indexOf(']');
    if (end < 0) return null;
    const host = v.slice(0, end + 1);
    const rest = v.slice(end + 1);
    if (!rest) return { host, port: null };
    if (!/^:\d{1,5}$/.test(rest)) return null;
    return { host, port: Number(rest.slice(1)) };
  }
  const parts = v.split(':');
  if (parts.length === 1) return { host: v, port: null };
  if (parts.length !== 2 || !/^\d{1,5}$/.test(parts[1])) return null;
  return { host: parts[0], port: Number(parts[1]) };
}

const unbracket = (host: string): string => host.replace(/^\[|\]$/g, '');

/**
 * A name the person configured with --allowed-host: as configured (`NAME:PORT` on that port only), and a
 * bare `NAME` with no port (a reverse proxy on its scheme's default port) or with ours.
 */
function configuredName(hp: { host: string; port: number | null }, cfg: GuardConfig): boolean {
  for (const entry of cfg.allowedHosts) {
    const a = splitHostPort(entry);
    if (!a || unbracket(a.host) !== unbracket(hp.host)) continue;
    if (a.port !== null ? hp.port === a.port : hp.port === null || hp.port === cfg.port()) return true;
  }
  return false;
}

/** `defaultPort` is what a missing port means: 80 for http (443 when we serve https). */
export function hostAllowed(hostHeader: string | undefined, cfg: GuardConfig, defaultPort: number = cfg.tls ? 443 : 80): boolean {
  if (!hostHeader) return false;
  const hp = splitHostPort(hostHeader);
  if (!hp) return false;
  if (configuredName(hp, cfg)) return true;
  const port = hp.port ?? defaultPort;
  if (port !== cfg.port()) return false;
  const bare = unbracket(hp.host);
  if (LOOPBACK_NAMES.has(hp.host) || LOOPBACK_NAMES.has(bare)) return true;
  // An address literal cannot be rebound by DNS: it is safe when we listen on it (or on every address).
  if (isIP(bare)) return bare === cfg.bindHost || cfg.bindHost === '0.0.0.0' || cfg.bindHost === '::';
  return false;
}

export function originAllowed(origin: string | undefined, cfg: GuardConfig): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  if (url.username || url.password || url.pathname !== '/' || url.search || url.hash) return false;
  const hp = splitHostPort(url.host);
  // A configured name may come with either scheme: a TLS proxy usually fronts a plain server.
  if (hp && configuredName(hp, cfg)) return true;
  // Our own origin otherwise: our scheme, our port.
  if (url.protocol !== (cfg.tls ? 'https:' : 'http:')) return false;
  return hostAllowed(url.host, cfg, url.protocol === 'https:' ? 443 : 80);
}

/** The value of cookie `name` in a Cookie header, or null. */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return null;
}

export function bearer(req: IncomingMessage, opts: { allowQuery: boolean; allowExecdHeader: boolean }): string | null {
  const auth = req.headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1];
  }
  const key = req.headers['x-api-key'];
  if (typeof key === 'string' && key) return key;
  if (opts.allowExecdHeader) {
    const execd = req.headers['x-execd-access-token'];
    if (typeof execd === 'string' && execd) return execd;
  }
  if (opts.allowQuery) {
    const q = new URL(req.url ?? '/', 'http://x').searchParams.get('api_key');
    if (q) return q;
  }
  return null;
}

/** Who is asking, and how they proved it: a token, or the viewer's session (cookie and key). */
export interface Authenticated {
  principal: Principal;
  via: 'token' | 'viewer';
}

export interface Credentials {
  tokens: TokenStore;
  logins: ViewerLogins;
  port: () => number;
}

export function authenticate(req: IncomingMessage, creds: Credentials, opts: { upgrade: boolean; execd: boolean }): Authenticated {
  const token = bearer(req, { allowQuery: opts.upgrade, allowExecdHeader: opts.execd });
  if (token) {
    const p = creds.tokens.authenticate(token);
    if (p) return { principal: actingAs(req, p), via: 'token' };
    throw new ApiError(401, 'Invalid credential: the token is unknown or was revoked', 'UNAUTHORIZED');
  }
  const c = cookieValue(req.headers.cookie, viewerCookieName(creds.port()));
  if (c) {
    const header = req.headers[VIEWER_KEY_HEADER];
    const key = typeof header === 'string' ? header : opts.upgrade ? new URL(req.url ?? '/', 'http://x').searchParams.get(VIEWER_KEY_QUERY) : null;
    if (creds.logins.check(c, key)) return { principal: ADMIN, via: 'viewer' };
    throw new ApiError(401, 'The viewer session is unknown, expired or revoked, or the page did not send its key: sign in again (ptydeck url prints a login link)', 'UNAUTHORIZED');
  }
  const carriers = opts.execd
    ? 'the X-EXECD-ACCESS-TOKEN header (or Authorization: Bearer)'
    : opts.upgrade
      ? 'Authorization: Bearer, x-api-key, or ?api_key='
      : 'Authorization: Bearer <token> or x-api-key';
  throw new ApiError(401, `Missing credential: send ${carriers}`, 'UNAUTHORIZED');
}

/** Methods that change nothing by HTTP's own rules (and that browsers send cross-site without Origin). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The viewer's session may change something only from our page: a browser sends Origin with every
 * request that is not a GET or HEAD and with every WebSocket handshake, so its absence means the request
 * did not come from a page (checkHostAndOrigin has already refused a foreign one).
 */
export function checkViewerOrigin(req: IncomingMessage, auth: Authenticated, opts: { upgrade: boolean }): void {
  if (auth.via !== 'viewer' || typeof req.headers.origin === 'string') return;
  if (!opts.upgrade && SAFE_METHODS.has(req.method ?? 'GET')) return;
  throw new ApiError(403, `${opts.upgrade ? 'A WebSocket' : `A ${req.method} request`} on the viewer's session must come from the viewer page (it sends Origin); agents send a token instead`, 'FORBIDDEN');
}

/**
 * The admin may act as a named agent (`X-Ptydeck-Agent: NAME`): `ptydeck mcp --agent NAME` uses this so
 * the sessions it opens appear under the agent's name. An agent token cannot use it.
 */
export const ACT_AS_HEADER = 'x-ptydeck-agent';

function actingAs(req: IncomingMessage, p: Principal): Principal {
  const name = req.headers[ACT_AS_HEADER];
  if (typeof name !== 'string' || p.kind !== 'admin') return p;
  if (!AGENT_NAME_PATTERN.test(name) || name === 'admin') throw new ApiError(400, `${ACT_AS_HEADER} must be an agent name: letters, digits and _ . -`, 'INVALID_REQUEST');
  return { kind: 'agent', name };
}

export function checkHostAndOrigin(req: IncomingMessage, cfg: GuardConfig): void {
  if (!hostAllowed(req.headers.host, cfg)) {
    throw new ApiError(
      403,
      `Host ${JSON.stringify(req.headers.host ?? '')} is not this server (DNS rebinding protection): use 127.0.0.1:${cfg.port()} or localhost:${cfg.port()}, or start it with --allowed-host NAME for a name you serve it under`,
      'FORBIDDEN',
    );
  }
  const origin = req.headers.origin;
  if (!originAllowed(typeof origin === 'string' ? origin : undefined, cfg)) {
    throw new ApiError(403, `Origin ${JSON.stringify(origin)} is not allowed: only pages served by this server may call it`, 'FORBIDDEN');
  }
}
