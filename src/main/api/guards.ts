import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { ApiError } from './errors';
import { ADMIN, AGENT_NAME_PATTERN, type Principal, type TokenStore } from './auth';

/**
 * The checks every request passes before any route sees it, HTTP and WebSocket alike:
 *   1. Host must name this server (a loopback name or address with our port, or a configured name):
 *      a DNS-rebinding page reaches us under its own domain name and is refused here.
 *   2. Origin, when a browser sends one, must be our own: a foreign page cannot drive our API or open
 *      our WebSockets with the person's cookie (browsers apply no CORS to WebSockets).
 *   3. A credential: Bearer, x-api-key, X-EXECD-ACCESS-TOKEN (execd door), ?api_key= (WebSocket upgrades
 *      only), or the viewer's HttpOnly cookie.
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
export const VIEWER_COOKIE = 'ptydeck_viewer';

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

export function viewerCookieValue(adminToken: string): string {
  return createHmac('sha256', adminToken).update('ptydeck viewer cookie v1').digest('base64url');
}

function cookie(req: IncomingMessage, name: string): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return null;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
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

export function authenticate(req: IncomingMessage, tokens: TokenStore, opts: { upgrade: boolean; execd: boolean }): Principal {
  const token = bearer(req, { allowQuery: opts.upgrade, allowExecdHeader: opts.execd });
  if (token) {
    const p = tokens.authenticate(token);
    if (p) return actingAs(req, p);
    throw new ApiError(401, 'Invalid credential: the token is unknown or was revoked', 'UNAUTHORIZED');
  }
  const c = cookie(req, VIEWER_COOKIE);
  if (c && safeEqual(c, viewerCookieValue(tokens.adminToken))) return ADMIN;
  const carriers = opts.execd
    ? 'the X-EXECD-ACCESS-TOKEN header (or Authorization: Bearer)'
    : opts.upgrade
      ? 'Authorization: Bearer, x-api-key, or ?api_key='
      : 'Authorization: Bearer <token> or x-api-key';
  throw new ApiError(401, `Missing credential: send ${carriers}`, 'UNAUTHORIZED');
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
