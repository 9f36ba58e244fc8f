import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, until, type TestServer } from './helpers';
import { cliPath } from './server-process';
import { WsClient } from './ws-client';

/** Principals, ownership on every door, browser-borne attacks, limits, and where the credential may go. */
let srv: TestServer;
let alice: string;
let bob: string;
beforeAll(async () => {
  srv = await startTestServer({ PTYDECK_MAX_SOCKETS: '4', PTYDECK_MAX_BODY_BYTES: String(64 * 1024), PTYDECK_MAX_INPUT_BYTES: '4096' });
  alice = (await srv.api('POST', '/api/tokens', { name: 'alice' })).body.token;
  bob = (await srv.api('POST', '/api/tokens', { name: 'bob' })).body.token;
});
afterAll(async () => {
  await srv.close();
});

const as = (token: string) => ({
  api: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => srv.api(method, path, body, { token, headers }),
});

/** A raw HTTP request, so Host and oversized headers go out exactly as written. */
function raw(path: string, headers: Record<string, string>, method = 'GET'): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: srv.port, path, method, headers, setHost: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('tokens', () => {
  test('the admin creates, lists and revokes agent tokens; agents may not', async () => {
    const list = await srv.api('GET', '/api/tokens');
    expect(list.body.tokens.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['alice', 'bob']));
    expect(JSON.stringify(list.body)).not.toContain(alice);
    expect((await as(alice).api('POST', '/api/tokens', { name: 'sneaky' })).status).toBe(403);
    expect((await as(alice).api('GET', '/api/tokens')).status).toBe(403);
    expect((await srv.api('POST', '/api/tokens', { name: 'alice' })).status).toBe(409);
    expect((await srv.api('POST', '/api/tokens', { name: '../etc' })).status).toBe(400);
    const temp = (await srv.api('POST', '/api/tokens', { name: 'temp' })).body.token;
    expect((await as(temp).api('GET', '/v2/pty/sessions')).status).toBe(200);
    const sock = await WsClient.open(`${srv.wsUrl}/v2/pty/ws`, { Authorization: `Bearer ${temp}` });
    await sock.nextJson('ready');
    expect((await srv.api('DELETE', '/api/tokens/temp')).body).toEqual({ name: 'temp', revoked: true });
    expect((await sock.waitClose()).code).toBe(4003);
    expect((await as(temp).api('GET', '/v2/pty/sessions')).status).toBe(401);
    expect((await srv.api('DELETE', '/api/tokens/temp')).status).toBe(404);
  });

  test('the CLI manages tokens in the same file, and a running server honours them at once', async () => {
    if (!existsSync(cliPath)) expect.fail(`the CLI is not built (${cliPath}); npm test builds it first`);
    // Asynchronously: a synchronous child would block this process, and with it the server under test,
    // which then drops the keep-alive connections its clients reuse (ECONNRESET).
    const run = async (...args: string[]) =>
      (await promisify(execFile)(process.execPath, ['-e', `require(${JSON.stringify(cliPath)}).run(process.argv.slice(1))`, ...args], { env: { ...process.env, PTYDECK_HOME: srv.home, PTYDECK_TOKEN: '' }, encoding: 'utf8' })).stdout;
    const fromCli = (await run('token', 'create', '--name', 'carol')).trim();
    expect(fromCli).toMatch(/^pdk_/);
    expect(await run('token', 'list')).toContain('carol');
    expect((await as(fromCli).api('GET', '/v2/pty/sessions')).status).toBe(200);
    await run('token', 'revoke', 'carol');
    expect(await until(async () => (await as(fromCli).api('GET', '/v2/pty/sessions')).status === 401, 15000)).toBe(true);
  });
});

describe('ownership: another agent gets 404 on every door', () => {
  let v2: string;
  let execd: string;
  beforeAll(async () => {
    v2 = (await as(alice).api('POST', '/v2/pty/sessions', { id: 'alice-v2', cwd: '/tmp' })).body.data.session_id;
    execd = (await as(alice).api('POST', '/pty', { cwd: '/tmp' })).body.session_id;
  });

  test('AIO v2 and v1 routes', async () => {
    const b = as(bob);
    for (const [method, path, body] of [
      ['GET', `/v2/pty/sessions/${v2}`],
      ['PATCH', `/v2/pty/sessions/${v2}`, { cols: 100 }],
      ['POST', `/v2/pty/sessions/${v2}/exec`, { command: 'id' }],
      ['GET', `/v2/pty/sessions/${v2}/screen`],
      ['POST', `/v2/pty/sessions/${v2}/input`, { input: 'rm -rf ~\r' }],
      ['POST', `/v2/pty/sessions/${v2}/wait`, { seconds: 0 }],
      ['POST', `/v2/pty/sessions/${v2}/signal`, {}],
      ['POST', '/v1/shell/exec', { id: v2, command: 'id' }],
      ['POST', '/v1/shell/view', { id: v2 }],
      ['POST', '/v1/shell/write', { id: v2, input: 'x', press_enter: true }],
      ['POST', '/v1/shell/wait', { id: v2 }],
      ['POST', '/v1/shell/kill', { id: v2 }],
      ['POST', '/v1/shell/sessions/update', { id: v2, no_change_timeout: 5 }],
      ['GET', `/v1/shell/terminal-url?session_id=${v2}`],
      ['GET', `/api/sessions/${v2}`],
      ['DELETE', `/api/sessions/${v2}`],
    ] as const) {
      const r = await b.api(method, path, body);
      expect([path, r.status]).toEqual([path, 404]);
    }
    // DELETE of a session you cannot see looks exactly like DELETE of one that is gone.
    expect((await b.api('DELETE', `/v2/pty/sessions/${v2}`)).body).toEqual({ success: false, message: `Session ${v2} not found`, data: null });
    expect((await b.api('DELETE', `/v1/shell/sessions/${v2}`)).body.success).toBe(false);
    // Creating under alice's id is refused.
    expect((await b.api('POST', '/v2/pty/sessions', { id: v2 })).status).toBe(400);
    // Bob's listings do not show it; bob's bulk delete does not touch it.
    expect(Object.keys((await b.api('GET', '/v2/pty/sessions')).body.data.sessions)).not.toContain(v2);
    expect(Object.keys((await b.api('GET', '/v1/shell/sessions')).body.data.sessions)).not.toContain(v2);
    expect((await b.api('GET', '/api/sessions')).body.sessions.map((s: { id: string }) => s.id)).not.toContain(v2);
    await b.api('DELETE', '/v1/shell/sessions');
    // Alice's session is untouched and still hers.
    expect((await as(alice).api('POST', `/v2/pty/sessions/${v2}/exec`, { command: 'echo mine' })).body.data.output).toBe('mine');
  });

  test('execd and WebSocket doors', async () => {
    const bh = { Authorization: `Bearer ${bob}` };
    expect((await as(bob).api('GET', `/pty/${execd}`)).status).toBe(404);
    expect((await as(bob).api('DELETE', `/pty/${execd}`)).status).toBe(404);
    await expect(WsClient.open(`${srv.wsUrl}/pty/${execd}/ws`, bh)).rejects.toMatchObject({ status: 404 });
    await expect(WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${v2}/ws`, bh)).rejects.toMatchObject({ status: 404 });
    const v1 = await WsClient.open(`${srv.wsUrl}/v1/shell/ws?session_id=${v2}`, bh);
    expect(await v1.nextJson('error')).toEqual({ type: 'error', data: 'Session not found' });
    await expect(WsClient.open(`${srv.wsUrl}/api/sessions/${v2}/view`, bh)).rejects.toMatchObject({ status: 403 });
    const events = await WsClient.open(`${srv.wsUrl}/api/events`, bh);
    const hello = await events.nextJson('hello');
    expect(hello.sessions.map((s: { id: string }) => s.id)).not.toContain(v2);
    events.close();
    // The person sees everything, with owners.
    const all = (await srv.api('GET', '/api/sessions')).body.sessions as { id: string; owner: string }[];
    expect(all.find((s) => s.id === v2)?.owner).toBe('alice');
    expect(all.find((s) => s.id === execd)?.owner).toBe('alice');
  });

  test('agents may not take the floor', async () => {
    for (const p of ['takeover', 'release', 'interrupt']) expect((await as(alice).api('POST', `/api/sessions/${v2}/${p}`)).status).toBe(403);
  });
});

describe('browser-borne attacks', () => {
  test('a Host that is not ours gets 403, on HTTP and on WebSocket upgrades', async () => {
    for (const host of ['evil.example', `evil.example:${srv.port}`, `127.0.0.1:${srv.port + 1}`, `localhost.evil.example:${srv.port}`, '']) {
      const r = await raw('/v2/pty/sessions', { Host: host, Authorization: `Bearer ${srv.token}` });
      expect([host, r.status]).toEqual([host, 403]);
    }
    for (const host of [`127.0.0.1:${srv.port}`, `localhost:${srv.port}`]) expect((await raw('/v2/pty/sessions', { Host: host, Authorization: `Bearer ${srv.token}` })).status).toBe(200);
    await expect(WsClient.open(`${srv.wsUrl}/v2/pty/ws`, { Host: `rebind.example:${srv.port}`, Authorization: `Bearer ${srv.token}` })).rejects.toMatchObject({ status: 403 });
  });

  test('a foreign Origin gets 403, even with a valid credential; our own origin works', async () => {
    const headers = { Origin: 'https://evil.example', Authorization: `Bearer ${srv.token}` };
    expect((await srv.api('POST', '/v2/pty/sessions', {}, { headers: { Origin: 'https://evil.example' } })).status).toBe(403);
    expect((await srv.api('GET', '/v2/pty/sessions', undefined, { headers: { Origin: 'http://evil.example' } })).status).toBe(403);
    expect((await srv.api('GET', '/v2/pty/sessions', undefined, { headers: { Origin: 'null' } })).status).toBe(403);
    await expect(WsClient.open(`${srv.wsUrl}/v2/pty/ws`, headers)).rejects.toMatchObject({ status: 403 });
    await expect(WsClient.open(`${srv.wsUrl}/api/events`, { Origin: 'https://evil.example', Cookie: 'ptydeck_viewer=x' })).rejects.toMatchObject({ status: 403 });
    expect((await srv.api('GET', '/v2/pty/sessions', undefined, { headers: { Origin: srv.url } })).status).toBe(200);
    const ws = await WsClient.open(`${srv.wsUrl}/api/events`, { Origin: srv.url, Authorization: `Bearer ${srv.token}` });
    await ws.nextJson('hello');
    ws.close();
  });

  test('no permissive CORS: no Access-Control-Allow-Origin, preflights are not granted', async () => {
    const r = await raw('/v2/pty/sessions', { Host: `127.0.0.1:${srv.port}`, Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' }, 'OPTIONS');
    expect(r.status).toBe(403);
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
    const ok = await raw('/v2/pty/sessions', { Host: `127.0.0.1:${srv.port}`, Authorization: `Bearer ${srv.token}` });
    expect(ok.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('?api_key= works on WebSocket upgrades only', async () => {
    expect((await srv.api('GET', `/v2/pty/sessions?api_key=${srv.token}`, undefined, { token: null })).status).toBe(401);
    const ws = await WsClient.open(`${srv.wsUrl}/api/events?api_key=${srv.token}`);
    await ws.nextJson('hello');
    ws.close();
  });
});

describe('limits answer with clear errors', () => {
  test('body over the limit: 413; one input over the limit: 413', async () => {
    const big = await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp', padding: 'x'.repeat(100 * 1024) });
    expect(big.status).toBe(413);
    expect(big.body.message).toMatch(/too large/);
    const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
    const input = await srv.api('POST', `/v2/pty/sessions/${sid}/input`, { input: 'y'.repeat(5000) });
    expect(input.status).toBe(413);
    expect(input.body.message).toMatch(/5000 bytes; the limit for one input is 4096/);
  });

  test('headers or URL over 16 KiB: 431', async () => {
    expect((await raw('/health', { Host: `127.0.0.1:${srv.port}`, 'X-Big': 'z'.repeat(20000) })).status).toBe(431);
    expect((await raw('/health?' + 'q'.repeat(20000), { Host: `127.0.0.1:${srv.port}` })).status).toBe(431);
  });

  test('open sockets per principal: the fifth is refused with 429', async () => {
    const dave = (await srv.api('POST', '/api/tokens', { name: 'dave' })).body.token;
    const open = await Promise.all(Array.from({ length: 4 }, () => WsClient.open(`${srv.wsUrl}/api/events`, { Authorization: `Bearer ${dave}` })));
    await expect(WsClient.open(`${srv.wsUrl}/api/events`, { Authorization: `Bearer ${dave}` })).rejects.toMatchObject({ status: 429 });
    open.forEach((s) => s.close());
    await Promise.all(open.map((s) => s.waitClose()));
    const again = await WsClient.open(`${srv.wsUrl}/api/events`, { Authorization: `Bearer ${dave}` });
    again.close();
  });

  test('session creations per minute per principal: 429 with a retry hint', async () => {
    const limited = await startTestServer({ PTYDECK_MAX_CREATES_PER_MINUTE: '3' });
    try {
      for (let i = 0; i < 3; i++) expect((await limited.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).status).toBe(200);
      const r = await limited.api('POST', '/pty', { cwd: '/tmp' });
      expect(r.status).toBe(429);
      expect(r.body.message).toMatch(/limit is 3 per minute; retry in \d+s/);
    } finally {
      await limited.close();
    }
  });
});

describe('where the credential lives', () => {
  test('the runtime file is 0600 in a 0700 directory and holds the URL and token', () => {
    const file = srv.app.runtimeFile;
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ url: srv.url, token: srv.token });
  });

  test("no token reaches a shell's environment", async () => {
    const env = (await srv.api('POST', '/v1/shell/exec', { command: 'env' })).body.data.output as string;
    expect(env).toContain('TERM=xterm-256color');
    expect(env).not.toContain(srv.token);
    expect(env).not.toMatch(/PTYDECK_TOKEN|PTYDECK_HOME/);
  });
});
