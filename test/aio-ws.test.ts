import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, sleep, testBackend, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/** AIO's terminal WebSocket (seed 003) against a real server and real bash. */
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  await srv.close();
});

const auth = () => ({ Authorization: `Bearer ${srv.token}` });
async function newSession(id?: string): Promise<string> {
  const r = await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp', ...(id ? { id } : {}) });
  return r.body.data.session_id;
}
const attach = (sid: string, query = '') => WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${sid}/ws${query ? `?${query}` : ''}`, auth());

test('ready, a paint of the screen, then live output of typed input', async () => {
  const sid = await newSession();
  const c = await attach(sid);
  expect(await c.nextJson('ready')).toEqual({ type: 'ready', session_id: sid, transport: 'json', backend: testBackend, resumed: false });
  const paint = await c.nextJson('output');
  expect(paint.data.startsWith('\x1b[H\x1b[2J')).toBe(true);
  expect(paint.data).toMatch(/\/tmp [$#] /);
  c.sendJson({ type: 'input', data: 'echo ws-$((6*7))\n' });
  await c.waitForOutput('ws-42');
  c.close();
});

test('protocol=binary: raw PTY bytes both ways, control frames stay JSON', async () => {
  const sid = await newSession();
  const c = await attach(sid, 'protocol=binary');
  expect((await c.nextJson('ready')).transport).toBe('binary');
  c.ws.send(Buffer.from('printf "%s-%s\\n" bin ary\r'));
  await c.waitForOutput('bin-ary');
  expect(c.frames.some((f) => f.binary && f.binary.toString().includes('bin-ary'))).toBe(true);
  c.sendJson({ type: 'ping', timestamp: 123 });
  expect(await c.nextJson('pong')).toEqual({ type: 'pong', timestamp: 123 });
  c.close();
});

test('resize with cols/rows at the top level or under data; ping/pong carries the timestamp', async () => {
  const sid = await newSession();
  const c = await attach(sid);
  await c.nextJson('ready');
  c.sendJson({ type: 'resize', cols: 111, rows: 33 });
  c.sendJson({ type: 'input', data: 'stty size\n' });
  await c.waitForOutput('33 111');
  c.sendJson({ type: 'resize', data: { cols: 99, rows: 22 } });
  c.sendJson({ type: 'input', data: 'stty size\n' });
  await c.waitForOutput('22 99');
  c.sendJson({ type: 'ping', timestamp: 1700000000000 });
  expect(await c.nextJson('pong')).toEqual({ type: 'pong', timestamp: 1700000000000 });
  c.sendJson({ type: 'resize', cols: 'wide' });
  expect((await c.nextJson('error')).data).toMatch(/resize needs integer cols/);
  c.close();
});

test('any other JSON or plain text is typed into the shell as raw input', async () => {
  const sid = await newSession();
  const c = await attach(sid);
  await c.nextJson('ready');
  c.ws.send('echo plain-text-input\n');
  await c.waitForOutput('plain-text-input\r\n');
  c.sendJson({ type: 'mystery', value: 1 });
  await c.waitForOutput('{"type":"mystery","value":1}');
  c.close();
});

test('a second plain socket is refused; a durable one takes over and the old one gets relay_replaced', async () => {
  const sid = await newSession();
  const first = await attach(sid, 'durable=true');
  expect((await first.nextJson('ready')).resumed).toBe(false);
  const refused = await attach(sid);
  expect(await refused.nextJson('error')).toEqual({ type: 'error', data: 'Session already has an active WebSocket connection' });
  await refused.waitClose();
  const second = await attach(sid, 'durable=true');
  expect((await second.nextJson('ready')).resumed).toBe(true);
  expect(await first.nextJson('relay_replaced')).toMatchObject({ type: 'relay_replaced' });
  await first.waitClose();
  second.sendJson({ type: 'input', data: 'echo still-here\n' });
  await second.waitForOutput('still-here\r\n');
  second.close();
});

test("seed 003's reconnect: restore_output, terminal_restored, then live; replay plus live equals the output byte for byte", async () => {
  const sid = await newSession();
  const q = 'durable=true&restore=true';
  const first = await attach(sid, q);
  await first.nextJson('ready');
  first.sendJson({ type: 'input', data: 'for i in 1 2 3 4 5 6; do echo build step $i; sleep 0.4; done\n' });
  await first.waitForOutput('build step 3');
  first.close();
  await first.waitClose();
  await sleep(900); // the build runs on while nothing is attached
  const again = await attach(sid, q);
  const types: string[] = [];
  const ready = await again.nextJson('ready');
  expect(ready).toEqual({ type: 'ready', session_id: sid, transport: 'json', backend: testBackend, resumed: true });
  await again.waitForOutput('build step 6\r\n', 10000, ['restore_output', 'output']);
  for (const f of again.frames) if (f.text?.type) types.push(f.text.type);
  // The seed's order: ready, restore_output, terminal_restored, then live output.
  expect(types.slice(0, 3)).toEqual(['ready', 'restore_output', 'terminal_restored']);
  expect(types.slice(3).every((t) => t === 'output')).toBe(true);
  const replay = again.frames.find((f) => f.text?.type === 'restore_output')!.text.data as string;
  expect(replay).toContain('for i in 1 2 3 4 5 6');
  expect(replay).toContain('build step 1\r\nbuild step 2\r\nbuild step 3\r\n');
  await until(() => srv.app.manager.get(sid)!.commands.state === 'prompt', 5000);
  await sleep(100);
  const received = again.outputText(['restore_output', 'output']);
  const truth = srv.app.manager.get(sid)!.log.read(0).toString('utf8');
  expect(received).toBe(truth);
  expect(received.match(/build step \d/g)).toEqual(['build step 1', 'build step 2', 'build step 3', 'build step 4', 'build step 5', 'build step 6']);
  // A later reconnect replays only the gap since this one.
  again.close();
  await again.waitClose();
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo after-gap' });
  const third = await attach(sid, q);
  await third.nextJson('ready');
  const gap = (await third.nextJson('restore_output')).data as string;
  expect(gap).toContain('after-gap');
  expect(gap).not.toContain('build step');
  await third.nextJson('terminal_restored');
  third.close();
});

test('replay_bytes bounds the restore snapshot (clamped to at least 256 KiB)', async () => {
  const sid = await newSession();
  const first = await attach(sid, 'durable=true');
  await first.nextJson('ready');
  first.close();
  await first.waitClose();
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: "python3 -c \"import sys; sys.stdout.write('x' * 600000)\"" });
  const again = await attach(sid, 'durable=true&restore=true&replay_bytes=1000');
  await again.nextJson('ready');
  const replay = (await again.nextJson('restore_output')).data as string;
  expect(Buffer.byteLength(replay)).toBe(256 * 1024);
  again.close();
});

describe('anonymous and v1 sockets', () => {
  test('/v2/pty/ws opens a shell that lives and dies with its socket', async () => {
    const before = Object.keys((await srv.api('GET', '/v2/pty/sessions')).body.data.sessions);
    const c = await WsClient.open(`${srv.wsUrl}/v2/pty/ws`, auth());
    const ready = await c.nextJson('ready');
    c.sendJson({ type: 'input', data: 'echo anon\n' });
    await c.waitForOutput('anon\r\n');
    const during = Object.keys((await srv.api('GET', '/v2/pty/sessions')).body.data.sessions);
    expect(during).toContain(ready.session_id);
    c.close();
    await until(async () => !Object.keys((await srv.api('GET', '/v2/pty/sessions')).body.data.sessions).includes(ready.session_id), 5000);
    expect(Object.keys((await srv.api('GET', '/v2/pty/sessions')).body.data.sessions).sort()).toEqual(before.sort());
  });

  test('/v1/shell/ws without session_id announces the new id before ready; the session stays after close', async () => {
    const c = await WsClient.open(`${srv.wsUrl}/v1/shell/ws`, auth());
    const first = await c.next();
    expect(first.text.type).toBe('session_id');
    const id = first.text.data;
    expect((await c.nextJson('ready')).session_id).toBe(id);
    c.close();
    await c.waitClose();
    await sleep(100);
    expect((await srv.api('GET', `/v2/pty/sessions/${id}`)).status).toBe(200);
    const byId = await WsClient.open(`${srv.wsUrl}/v1/shell/ws?session_id=${id}`, auth());
    expect((await byId.nextJson('ready')).session_id).toBe(id);
    byId.close();
  });

  test('durable or restore without an explicit session answers 400; an unknown session 404 (v2) or an error frame (v1)', async () => {
    await expect(WsClient.open(`${srv.wsUrl}/v2/pty/ws?durable=true`, auth())).rejects.toMatchObject({ status: 400 });
    await expect(WsClient.open(`${srv.wsUrl}/v1/shell/ws?restore=true`, auth())).rejects.toMatchObject({ status: 400 });
    await expect(WsClient.open(`${srv.wsUrl}/v2/pty/sessions/nope/ws`, auth())).rejects.toMatchObject({ status: 404 });
    const v1 = await WsClient.open(`${srv.wsUrl}/v1/shell/ws?session_id=nope`, auth());
    expect(await v1.nextJson('error')).toEqual({ type: 'error', data: 'Session not found' });
    await v1.waitClose();
  });

  test('the api_key query parameter authenticates a socket; no credential is 401', async () => {
    const sid = await newSession();
    const c = await WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${sid}/ws?api_key=${srv.token}`);
    await c.nextJson('ready');
    c.close();
    await expect(WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${sid}/ws`)).rejects.toMatchObject({ status: 401 });
  });
});

test('REST and the socket share one shell; the socket hears the shell exit', async () => {
  const sid = await newSession();
  const c = await attach(sid);
  await c.nextJson('ready');
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo from-rest' });
  await c.waitForOutput('from-rest');
  c.sendJson({ type: 'input', data: 'exit 3\n' });
  expect(await c.nextJson('exit')).toEqual({ type: 'exit', exit_code: 3 });
  expect((await c.waitClose()).code).toBe(1000);
});
