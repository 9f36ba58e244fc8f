import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startCliProcess, startTestServer, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * The person's viewer login: a one-time link (never the admin token in a URL), traded for a random,
 * revocable, short-lived server-side session whose cookie alone is not a credential, and never enough
 * to change anything without our Origin.
 */
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  await srv.close();
});

interface Login {
  cookie: string;
  key: string;
  setCookie: string;
}

const cookieName = () => `ptydeck_viewer_${srv.port}`;
const codeOf = (link: string): string => new URL(link).searchParams.get('login') ?? '';

async function login(body: Record<string, string>): Promise<{ status: number; login: Login | null; body: any }> {
  const res = await fetch(`${srv.url}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: srv.url }, body: JSON.stringify(body) });
  const json = await res.json();
  const setCookie = res.headers.get('set-cookie') ?? '';
  if (res.status !== 200) return { status: res.status, login: null, body: json };
  const cookie = setCookie.split(';')[0];
  return { status: res.status, login: { cookie, key: json.key, setCookie }, body: json };
}

/** A request the way a page (or a thief) sends it: the cookie, and whatever else it has. */
async function viewer(method: string, path: string, l: Login, opts: { key?: boolean; origin?: string | null } = {}): Promise<number> {
  const headers: Record<string, string> = { Cookie: l.cookie };
  if (opts.key !== false) headers['X-Ptydeck-Viewer-Key'] = l.key;
  if (opts.origin !== null) headers.Origin = opts.origin ?? srv.url;
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  const res = await fetch(srv.url + path, { method, headers, body: method === 'GET' ? undefined : '{}' });
  await res.arrayBuffer();
  return res.status;
}

describe('the login link', () => {
  test('the admin token is in no URL: not in the printed start line, not in the runtime file', async () => {
    const cli = await startCliProcess();
    try {
      await until(() => cli.output().includes('?login='), 10_000);
      const printed = cli.output();
      expect(printed).toContain(`${cli.url}/?login=`);
      expect(printed).not.toContain(cli.token);
      const runtime = JSON.parse(readFileSync(`${cli.home}/runtime.json`, 'utf8'));
      expect(runtime.viewerUrl).toBe(`${cli.url}/`);
      // The printed link works once.
      const code = /\?login=([A-Za-z0-9_-]+)/.exec(printed)![1];
      const first = await fetch(`${cli.url}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }) });
      expect(first.status).toBe(200);
      const again = await fetch(`${cli.url}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }) });
      expect(again.status).toBe(401);
    } finally {
      await cli.stop();
    }
  });

  test('a code works once; a wrong one is refused; the cookie is HttpOnly, SameSite=Strict, named for this port, and ends with the browser', async () => {
    const link = srv.app.loginLink();
    expect(link).not.toContain(srv.token);
    const code = codeOf(link);
    const first = await login({ code });
    expect(first.status).toBe(200);
    expect(first.login!.setCookie).toMatch(new RegExp(`^${cookieName()}=[A-Za-z0-9_-]{40,}; `));
    expect(first.login!.setCookie).toMatch(/; HttpOnly/);
    expect(first.login!.setCookie).toMatch(/; SameSite=Strict/);
    expect(first.login!.setCookie).not.toMatch(/Max-Age|Expires/i);
    expect(first.login!.key).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect((await login({ code })).status).toBe(401);
    expect((await login({ code: 'not-a-code' })).status).toBe(401);
    expect(await viewer('GET', '/api/sessions', first.login!)).toBe(200);
  });

  test('the admin token pasted into the form still signs in (in a body, never a URL); ?token= in a URL does not', async () => {
    expect((await login({ token: srv.token })).status).toBe(200);
    const res = await fetch(`${srv.url}/?token=${srv.token}`, { redirect: 'manual' });
    expect(res.headers.get('set-cookie')).toBeNull();
  });
});

describe('the viewer session', () => {
  test('each login is a new random session; the old fixed cookie (an HMAC of the admin token) is no credential', async () => {
    const a = (await login({ token: srv.token })).login!;
    const b = (await login({ token: srv.token })).login!;
    expect(a.cookie).not.toBe(b.cookie);
    const hmac = createHmac('sha256', srv.token).update('ptydeck viewer cookie v1').digest('base64url');
    for (const name of ['ptydeck_viewer', cookieName()]) {
      const res = await fetch(`${srv.url}/api/sessions`, { headers: { Cookie: `${name}=${hmac}` } });
      expect([name, res.status]).toEqual([name, 401]);
    }
  });

  test('a cookie captured on another port is no credential without the page-held key, on HTTP and WebSockets', async () => {
    const l = (await login({ token: srv.token })).login!;
    expect(await viewer('GET', '/api/sessions', l, { key: false })).toBe(401);
    expect(await viewer('GET', '/api/tokens', l, { key: false, origin: null })).toBe(401);
    expect(await viewer('POST', '/api/tokens', l, { key: false })).toBe(401);
    await expect(WsClient.open(`${srv.wsUrl}/api/events`, { Cookie: l.cookie, Origin: srv.url })).rejects.toMatchObject({ status: 401 });
    const ws = await WsClient.open(`${srv.wsUrl}/api/events?viewer_key=${l.key}`, { Cookie: l.cookie, Origin: srv.url });
    await ws.nextJson('hello');
    ws.close();
  });

  test('with the cookie, a request that changes state needs our Origin; a WebSocket too', async () => {
    const l = (await login({ token: srv.token })).login!;
    expect(await viewer('POST', '/v2/pty/sessions', l, { origin: null })).toBe(403);
    expect(await viewer('POST', '/v2/pty/sessions', l, { origin: `http://127.0.0.1:${srv.port + 1}` })).toBe(403);
    expect(await viewer('DELETE', '/api/sessions/none', l, { origin: null })).toBe(403);
    expect(await viewer('POST', '/v2/pty/sessions', l)).toBe(200);
    await expect(WsClient.open(`${srv.wsUrl}/api/events?viewer_key=${l.key}`, { Cookie: l.cookie })).rejects.toMatchObject({ status: 403 });
  });

  test('logging out revokes the session at once', async () => {
    const l = (await login({ token: srv.token })).login!;
    expect(await viewer('GET', '/api/whoami', l)).toBe(200);
    expect(await viewer('POST', '/api/logout', l)).toBe(200);
    expect(await viewer('GET', '/api/whoami', l)).toBe(401);
  });
});

describe('no GET changes anything on the cookie alone', () => {
  test('<img src=/v1/shell/terminal-url> creates no session; the same GET with a real credential still does', async () => {
    const l = (await login({ token: srv.token })).login!;
    const count = () => srv.app.manager.size;
    const before = count();
    // What an <img> on another port sends: the cookie, no Origin, no key.
    expect(await viewer('GET', '/v1/shell/terminal-url', l, { key: false, origin: null })).toBe(401);
    // Even the page itself may not create by GET with its cookie.
    expect(await viewer('GET', '/v1/shell/terminal-url', l, { origin: null })).toBe(403);
    expect(count()).toBe(before);
    const real = await srv.api('GET', '/v1/shell/terminal-url');
    expect(real.status).toBe(200);
    expect(count()).toBe(before + 1);
    const agentKey = await fetch(`${srv.url}/v1/shell/terminal-url`, { headers: { 'x-api-key': srv.token } });
    expect(agentKey.status).toBe(200);
  });
});
