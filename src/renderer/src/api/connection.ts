/**
 * Where the API is and how to prove who we are, the one place that knows the difference between the
 * two homes of the viewer:
 *   - web page served by `ptydeck serve`: same origin; the viewer session's HttpOnly cookie (which the
 *     browser sends by itself) together with the session's key, which this page keeps in storage scoped
 *     to its own origin and sends as a header (fetch) or `?viewer_key=` (WebSockets cannot carry
 *     headers). The cookie alone is no credential: a browser sends it to every port of 127.0.0.1.
 *   - Electron window: the preload hands over the server origin and the admin token, which go in an
 *     Authorization header (fetch) or `?api_key=`.
 */
const VIEWER_KEY_STORAGE = 'ptydeck.viewerKey';

function bridge(): PtydeckBridge | undefined {
  return typeof window === 'undefined' ? undefined : window.ptydeck;
}

function token(): string {
  return bridge()?.token ?? '';
}

function viewerKey(): string {
  try {
    return window.localStorage.getItem(VIEWER_KEY_STORAGE) ?? '';
  } catch {
    return '';
  }
}

/** Keeps the key of a new viewer session (or forgets it, with null). */
export function setViewerKey(key: string | null): void {
  try {
    if (key) window.localStorage.setItem(VIEWER_KEY_STORAGE, key);
    else window.localStorage.removeItem(VIEWER_KEY_STORAGE);
  } catch {
    // Storage disabled: this page cannot stay signed in, and will ask again.
  }
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
  else if (viewerKey()) url.searchParams.set('viewer_key', viewerKey());
  return url.toString();
}

export function authHeaders(): Record<string, string> {
  const t = token();
  if (t) return { Authorization: `Bearer ${t}` };
  const key = viewerKey();
  return key ? { 'X-Ptydeck-Viewer-Key': key } : {};
}

/** True when a token came from the preload: a login form can never help then. */
export function hasBridgeToken(): boolean {
  return token() !== '';
}

/** The address an agent should call, for the empty state's instructions. */
export function apiOrigin(): string {
  return origin();
}
