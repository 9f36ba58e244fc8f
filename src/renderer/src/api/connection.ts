/**
 * Where the API is and how to prove who we are, the one place that knows the difference between the
 * two homes of the viewer:
 *   - web page served by `ptydeck serve`: same origin, authenticated by the HttpOnly cookie;
 *   - Electron window: the preload hands over the server origin and the admin token, which go in an
 *     Authorization header (fetch) or `?api_key=` (WebSockets cannot carry headers).
 */
function bridge(): PtydeckBridge | undefined {
  return typeof window === 'undefined' ? undefined : window.ptydeck;
}

function token(): string {
  return bridge()?.token ?? '';
}

function origin(): string {
  return bridge()?.apiBase || window.location.origin;
}

export function httpUrl(path: string): string {
  return origin() + path;
}

export function wsUrl(path: string): string {
  const url = new URL(path, origin());
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const t = token();
  if (t) url.searchParams.set('api_key', t);
  return url.toString();
}

export function authHeaders(): Record<string, string> {
  const t = token();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

/** True when a token came from the preload: a login form can never help then. */
export function hasBridgeToken(): boolean {
  return token() !== '';
}

/** The address an agent should call, for the empty state's instructions. */
export function apiOrigin(): string {
  return origin();
}
