import { afterAll, beforeAll, expect, test } from 'vitest';
import { V1ShellWsTiming } from '../src/main/api/aio-ws';
import { startTestServer, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * What a strict client of AIO notices beyond the shapes: the status for a wrong method, the status and
 * body for a body that is not JSON, and 1.x's application-level ping on /v1/shell/ws.
 */
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  // Explicitly created sessions are durable on the tmux backend: end them, not only the server.
  await srv.app.manager.closeAll();
  await srv.close();
});

const raw = (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
  fetch(srv.url + path, { method, headers: { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json', ...headers }, body });

test('a wrong method on a known route is 405 with Allow, in each dialect', async () => {
  const cases: [string, string, string, (b: any) => string][] = [
    ['GET', '/v1/bash/exec', 'POST', (b) => b.message],
    ['DELETE', '/v1/shell/exec', 'POST', (b) => b.message],
    ['PUT', '/v2/pty/sessions', 'GET, HEAD, POST', (b) => b.message],
    ['POST', '/v2/pty/sessions/some-id', 'GET, HEAD, PATCH, DELETE', (b) => b.message],
    ['PATCH', '/pty/some-id', 'GET, HEAD, DELETE', (b) => b.message],
    ['PUT', '/api/sessions', 'GET, HEAD, POST', (b) => b.error.message],
    ['POST', '/v2/pty/sessions/some-id/ws', 'GET', (b) => b.message],
    ['OPTIONS', '/v1/bash/sessions', 'GET, HEAD', (b) => b.message],
  ];
  for (const [method, path, allow, messageOf] of cases) {
    const res = await raw(method, path);
    expect(res.status, `${method} ${path}`).toBe(405);
    expect(res.headers.get('allow'), `${method} ${path}`).toBe(allow);
    expect(messageOf(await res.json())).toBe(`Method ${method} is not allowed on ${path}; it accepts ${allow}`);
  }
  // The dialects keep their shapes: AIO's envelope, execd's code, ptydeck's error object.
  expect(await (await raw('GET', '/v1/bash/exec')).json()).toMatchObject({ success: false, data: null });
  expect(await (await raw('PATCH', '/pty/x')).json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
  expect(await (await raw('PUT', '/api/sessions')).json()).toMatchObject({ error: { code: 'METHOD_NOT_ALLOWED' } });
  // Unknown paths stay 404; a plain GET on a WebSocket route says what is missing.
  expect((await raw('GET', '/v1/bash/nothing-here')).status).toBe(404);
  const plain = await raw('GET', '/v2/pty/sessions/x/ws');
  expect(plain.status).toBe(400);
  expect((await plain.json()).message).toMatch(/needs a WebSocket upgrade/);
  // The credential is still checked first.
  expect((await fetch(srv.url + '/v1/bash/exec', { method: 'GET' })).status).toBe(401);
});

test('a body that is not JSON is 422 in FastAPI shape on AIO routes, 400 elsewhere', async () => {
  for (const path of ['/v1/bash/exec', '/v1/shell/exec', '/v2/pty/sessions']) {
    const res = await raw('POST', path, '{"command": "true",}');
    expect(res.status, path).toBe(422);
    const body = await res.json();
    expect(body).toMatchObject({ success: false, data: null });
    expect(body.message).toMatch(/^Request body is not valid JSON: /);
    expect(body.detail).toEqual([{ loc: ['body', expect.any(Number)], msg: 'JSON decode error', type: 'json_invalid' }]);
  }
  const native = await raw('POST', '/api/sessions', '{nope');
  expect(native.status).toBe(400);
  expect((await native.json()).error.code).toBe('INVALID_REQUEST_BODY');
  const execd = await raw('POST', '/pty', '{nope');
  expect(execd.status).toBe(400);
  expect((await execd.json()).code).toBe('INVALID_REQUEST_BODY');
});

test('/v1/shell/ws sends 1.x\'s application-level ping; the v2 socket does not', async () => {
  const before = V1ShellWsTiming.AppPingMs;
  V1ShellWsTiming.AppPingMs = 100;
  const auth = { Authorization: `Bearer ${srv.token}` };
  const v1 = await WsClient.open(`${srv.wsUrl}/v1/shell/ws`, auth);
  const sid = (await v1.nextJson('session_id')).data;
  const v2 = await WsClient.open(`${srv.wsUrl}/v2/pty/ws`, auth);
  try {
    const pings = [await v1.nextJson('ping'), await v1.nextJson('ping')];
    for (const p of pings) expect(p).toEqual({ type: 'ping', timestamp: expect.any(Number) });
    expect(pings[1].timestamp).toBeGreaterThanOrEqual(pings[0].timestamp);
    // By now the v2 socket, open as long, has had as many chances to ping: it sends none.
    await v2.nextJson('ready');
    await v1.nextJson('ping');
    expect(v2.frames.some((f) => f.text?.type === 'ping')).toBe(false);
  } finally {
    V1ShellWsTiming.AppPingMs = before;
    v1.close();
    v2.close();
    await srv.api('DELETE', `/v1/shell/sessions/${sid}`);
  }
});
