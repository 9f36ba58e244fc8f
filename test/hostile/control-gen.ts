import type { Rng } from './prng';
import { dialectOf } from './oracle';
import type { Tally } from './oracle';
import type { HttpReq, HttpRes } from './transport';

/**
 * Attack families of issue 11 ("control that holds"), added so that each defect's neighbours are tried
 * too, not only its one reproduction:
 *
 *   paths        cwd/exec_dir on kernel pseudo-filesystems, through links into them, and $VARs of the
 *                server's own environment (the server must neither hang nor create nor leak)
 *   escapes      commands whose processes shed their parent, session and environment tag before the
 *                session is closed (they must not outlive it)
 *   viewer cookie  the person's viewer cookie without its key (as another port receives it), the old
 *                fixed cookie, the real session without Origin on requests that change something, and
 *                GETs that would create a terminal (an <img> on another page)
 *   queries      programs printing terminal queries without reading the answers
 */

/** Directories no agent may have created, each with why; the generators use them as cwd. */
export function pseudoDirs(tmp: string): string[] {
  return [
    '/proc/hostile-x',
    '/proc/self/hostile-x',
    '/proc/hostile-x/deeper/still',
    '/sys/hostile-x',
    '/sys/fs/cgroup/hostile-x',
    '/dev/hostile-x',
    '/dev/pts/hostile-x',
    `${tmp}/link-to-proc/hostile-x`,
    `${tmp}/link-to-proc/../link-to-proc/hostile-x`,
  ];
}

/** Places the pseudo-directory values above would create something, if the server created them. */
export const PSEUDO_CREATIONS = ['/proc/hostile-x', '/sys/hostile-x', '/sys/fs/cgroup/hostile-x', '/dev/hostile-x', '/dev/pts/hostile-x'];

/** cwd values that name variables of the server's own environment (never to be expanded from there). */
export const SERVER_ENV_DIRS = ['/dev/null/$PTYDECK_TOKEN', '${PTYDECK_TOKEN}', '/tmp/$PTYDECK_TOKEN/../x', '$PTYDECK_HOME/x', '/x/${PTYDECK_HOME}'];

/** The command-line argument every escaping process carries, so the suite can find survivors. */
export const ESCAPE_MARK = 77713;

/** Commands that leave processes behind which shed what teardown used to rely on. Safe: they only sleep. */
export function escapeCommand(rng: Rng): string {
  const mark = `${ESCAPE_MARK}.${rng.int(0, 1_000_000)}`;
  return rng.pick([
    `env -i setsid sh -c 'sleep ${mark} &'`,
    `env -u PTYDECK_SESSION setsid sh -c 'sleep ${mark} &'`,
    `(setsid sleep ${mark} &)`,
    `nohup sleep ${mark} >/dev/null 2>&1 &`,
    `( ( env -i sleep ${mark} & ) & )`,
    `env -i sh -c '(trap "" HUP TERM; exec sleep ${mark}) &'`,
  ]);
}

/** True for the command line of a process an escape command started. */
export const isEscapeMark = (cmdline: string): boolean => new RegExp(`^sleep ${ESCAPE_MARK}\\.\\d+$`).test(cmdline);

/** A program that floods the terminal with queries (cursor position, device attributes, colour) and never reads the answers. */
export const QUERY_FLOOD = `while :; do for i in $(seq 100); do printf '\\033[6n\\033[c\\033]11;?\\007\\033[>c'; done; sleep 0.2; done`;

// ---------------------------------------------------------------- the viewer's cookie

export interface ViewerCredentials {
  /** `name=value` of a live viewer session's cookie. */
  cookie: string;
  /** That session's key (what the page holds and another port never sees). */
  key: string;
  /** The old fixed cookie: an HMAC of the admin token, under the old name and the new one. */
  fixedCookies: string[];
  origin: string;
}

export interface CookieCase {
  id: string;
  variant: 'stolen' | 'fixed' | 'no-origin' | 'get-creates' | 'page';
  req: HttpReq;
  /** Statuses the answer may have. */
  allowed: number[];
  /** The request must not create a session (the suite counts sessions around it). */
  mustNotCreate: boolean;
}

/** Routes a cookie case may use: the catalogue's shapes, with ids that name no live session. */
const COOKIE_ROUTES: { method: string; path: string; body?: unknown; creates?: boolean }[] = [
  { method: 'GET', path: '/v2/pty/sessions' },
  { method: 'GET', path: '/api/sessions' },
  { method: 'GET', path: '/api/tokens' },
  { method: 'GET', path: '/api/whoami' },
  { method: 'GET', path: '/v1/shell/sessions/stats' },
  { method: 'GET', path: '/v2/pty/sessions/cookie-none' },
  { method: 'GET', path: '/v1/shell/terminal-url', creates: true },
  { method: 'POST', path: '/v2/pty/sessions', body: { cwd: '/tmp' }, creates: true },
  { method: 'POST', path: '/api/sessions', body: { cwd: '/tmp' }, creates: true },
  { method: 'POST', path: '/v1/shell/sessions/create', body: {}, creates: true },
  { method: 'POST', path: '/v1/shell/exec', body: { command: 'true' }, creates: true },
  { method: 'POST', path: '/pty', body: { cwd: '/tmp' }, creates: true },
  { method: 'POST', path: '/api/tokens', body: { name: 'cookie-made' } },
  { method: 'DELETE', path: '/api/tokens/mallory' },
  { method: 'POST', path: '/api/sessions/cookie-none/takeover' },
  { method: 'POST', path: '/v2/pty/sessions/cookie-none/input', body: { input: 'x' } },
  { method: 'DELETE', path: '/v2/pty/sessions/cookie-none' },
  { method: 'POST', path: '/api/login-links' },
  { method: 'POST', path: '/api/logout', body: { all: true } },
  { method: 'PATCH', path: '/v2/pty/sessions/cookie-none', body: { cols: 100 } },
];

export function generateCookieCase(index: number, root: Rng, port: number, v: ViewerCredentials): CookieCase {
  const rng = root.fork('cookie', index);
  const id = `cookie#${index}`;
  const host = { Host: rng.pick([`127.0.0.1:${port}`, `localhost:${port}`]) };
  const variant = rng.weighted<CookieCase['variant']>([
    [4, 'stolen'],
    [2, 'fixed'],
    [3, 'no-origin'],
    [2, 'get-creates'],
    [2, 'page'],
  ]);
  const json = (b: unknown) => (b === undefined ? undefined : Buffer.from(JSON.stringify(b)));
  const withBody = (r: { method: string; path: string; body?: unknown }, headers: Record<string, string>): HttpReq => ({
    method: r.method,
    path: r.path,
    headers: r.body === undefined ? headers : { ...headers, 'Content-Type': 'application/json' },
    body: json(r.body),
  });
  switch (variant) {
    case 'stolen': {
      // What a listener on another port of 127.0.0.1 receives when the person follows its link.
      const r = rng.pick(COOKIE_ROUTES);
      const headers: Record<string, string> = { ...host, Cookie: v.cookie };
      if (rng.chance(0.5)) headers.Origin = v.origin;
      return { id, variant, req: withBody(r, headers), allowed: [401], mustNotCreate: true };
    }
    case 'fixed': {
      const r = rng.pick(COOKIE_ROUTES);
      return { id, variant, req: withBody(r, { ...host, Cookie: rng.pick(v.fixedCookies), 'X-Ptydeck-Viewer-Key': rng.pick([v.key, 'x']) }), allowed: [401], mustNotCreate: true };
    }
    case 'no-origin': {
      // The real session (cookie and key), but no Origin: not from the viewer page.
      const r = rng.pick(COOKIE_ROUTES.filter((x) => x.method !== 'GET'));
      return { id, variant, req: withBody(r, { ...host, Cookie: v.cookie, 'X-Ptydeck-Viewer-Key': v.key }), allowed: [403], mustNotCreate: true };
    }
    case 'get-creates': {
      const headers: Record<string, string> = { ...host, Cookie: v.cookie };
      if (rng.chance(0.5)) headers['X-Ptydeck-Viewer-Key'] = v.key;
      if (rng.chance(0.3)) headers.Origin = v.origin;
      return { id, variant, req: { method: 'GET', path: '/v1/shell/terminal-url', headers }, allowed: [401, 403], mustNotCreate: true };
    }
    case 'page': {
      // The page itself, reading: this must work.
      const r = rng.pick(COOKIE_ROUTES.filter((x) => x.method === 'GET' && !x.creates && x.path !== '/v2/pty/sessions/cookie-none'));
      return { id, variant, req: { method: 'GET', path: r.path, headers: { ...host, Cookie: v.cookie, 'X-Ptydeck-Viewer-Key': v.key } }, allowed: [200], mustNotCreate: true };
    }
  }
}

export function judgeCookieCase(c: CookieCase, res: HttpRes, created: number, tally: Tally, where: string): void {
  tally.try('http');
  tally.check(`viewer cookie: ${c.variant}`);
  if (res.status <= 0) {
    tally.other('http', 'hang');
    tally.violate(res.status === -1 ? 'hang' : 'no-answer', where, res.error ?? 'no answer');
    return;
  }
  if (res.status >= 500) tally.violate('server-error', where, `got ${res.status} ${res.text.slice(0, 200)}`);
  if (res.status < 400) tally.accept('http', String(res.status));
  else tally.reject('http', String(res.status), `viewer cookie (${c.variant})`);
  if (!c.allowed.includes(res.status)) tally.violate('cookie-credential', where, `${c.variant}: expected ${c.allowed.join(' or ')}, got ${res.status} ${res.text.slice(0, 200)}`);
  if (c.mustNotCreate && created > 0) tally.violate('cookie-credential', where, `${c.variant}: the request created ${created} session(s)`);
  if (res.status >= 400 && dialectOf(c.req.path) === 'native' && !/"message"/.test(res.text)) tally.violate('message', where, `refusal without a message: ${res.text.slice(0, 200)}`);
}
