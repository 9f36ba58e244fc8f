import { rmSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, sleep, until, type TestServer } from './helpers';
import { WsClient, type Frame } from './ws-client';

/** OpenSandbox execd's /pty door: their own test list, as ours, against real bash. */
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ PTYDECK_LOG_BYTES: String(64 * 1024) });
});
afterAll(async () => {
  await srv.close();
  // The directory a test's session cwd created (DELETE … is expanded and created).
  rmSync(`/tmp/ptydeck-execd-${process.pid}`, { recursive: true, force: true });
});

const execdHeaders = () => ({ 'X-EXECD-ACCESS-TOKEN': srv.token });
async function createPty(body: Record<string, unknown> = { cwd: '/tmp' }): Promise<string> {
  const r = await srv.api('POST', '/pty', body, { token: null, headers: execdHeaders() });
  expect(r.status).toBe(201);
  expect(Object.keys(r.body)).toEqual(['session_id']);
  return r.body.session_id;
}
const connect = (id: string, query = '') => WsClient.open(`${srv.wsUrl}/pty/${id}/ws${query ? `?${query}` : ''}`, execdHeaders());
const stdin = (c: WsClient, text: string) => c.ws.send(Buffer.concat([Buffer.from([0x00]), Buffer.from(text)]));
const channel = (ch: number) => (f: Frame) => Boolean(f.binary && f.binary[0] === ch);
const payloadText = (c: WsClient, ch: number) =>
  c.frames
    .filter(channel(ch))
    .map((f) => f.binary!.subarray(ch === 3 ? 9 : 1).toString())
    .join('');
async function waitChannel(c: WsClient, ch: number, text: string): Promise<void> {
  const ok = await until(() => payloadText(c, ch).includes(text), 10000, 20);
  if (!ok) throw new Error(`channel ${ch} never showed ${text}: ${JSON.stringify(payloadText(c, ch).slice(-300))}`);
}

test('unknown session: 404 before the upgrade', async () => {
  await expect(connect('no-such-session')).rejects.toMatchObject({ status: 404, body: { code: 'CONTEXT_NOT_FOUND' } });
  const r = await srv.api('GET', '/pty/no-such-session', undefined, { token: null, headers: execdHeaders() });
  expect(r).toMatchObject({ status: 404, body: { code: 'CONTEXT_NOT_FOUND', message: 'pty session no-such-session not found' } });
});

test('REST status: not running before the first socket; connected frame in pty mode; stdin echoes', async () => {
  const id = await createPty();
  const before = await srv.api('GET', `/pty/${id}`, undefined, { token: null, headers: execdHeaders() });
  expect(before.body).toEqual({ session_id: id, running: false, output_offset: 0, controller: 'agent' });
  const c = await connect(id);
  expect(await c.nextJson('connected')).toEqual({ type: 'connected', session_id: id, mode: 'pty' });
  stdin(c, 'echo marker-$((40+2))\n');
  await waitChannel(c, 1, 'marker-42');
  const after = await srv.api('GET', `/pty/${id}`, undefined, { token: null, headers: execdHeaders() });
  expect(after.body.running).toBe(true);
  expect(after.body.output_offset).toBeGreaterThan(0);
  // A /pty session is a session like any other: the AIO listing shows it.
  expect(Object.keys((await srv.api('GET', '/v2/pty/sessions')).body.data.sessions)).toContain(id);
  c.close();
});

test('ping/pong, resize read back by stty size, exit 0 gives the exit frame and close 1000', async () => {
  const id = await createPty();
  const c = await connect(id);
  await c.nextJson('connected');
  c.sendJson({ type: 'ping' });
  expect(await c.nextJson('pong')).toEqual({ type: 'pong' });
  c.sendJson({ type: 'resize', cols: 120, rows: 40 });
  stdin(c, 'stty size\n');
  await waitChannel(c, 1, '40 120');
  c.sendJson({ type: 'resize', cols: 0, rows: 10 });
  expect((await c.nextJson('error')).code).toBe('INVALID_FRAME');
  c.sendJson({ type: 'warp' });
  expect(await c.nextJson('error')).toEqual({ type: 'error', error: 'unknown frame type "warp"', code: 'INVALID_FRAME' });
  stdin(c, 'exit 0\n');
  expect(await c.nextJson('exit')).toEqual({ type: 'exit', exit_code: 0 });
  expect(await c.waitClose()).toMatchObject({ code: 1000 });
});

test('a second client gets 409 ALREADY_CONNECTED; a plain GET with takeover=1 is 409 and evicts no one', async () => {
  const id = await createPty();
  const holder = await connect(id);
  await holder.nextJson('connected');
  await expect(connect(id)).rejects.toMatchObject({ status: 409, body: { code: 'ALREADY_CONNECTED' } });
  const plain = await srv.api('GET', `/pty/${id}/ws?takeover=1`, undefined, { token: null, headers: execdHeaders() });
  expect(plain.status).toBe(409);
  stdin(holder, 'echo still-held\n');
  await waitChannel(holder, 1, 'still-held');
  holder.close();
});

test('takeover=1 closes the holder with 4001 TAKEN_OVER; the new client gets replay, then connected, and the same shell', async () => {
  const id = await createPty();
  const first = await connect(id);
  await first.nextJson('connected');
  stdin(first, 'export KEPT=by-first-client; echo set-done\n');
  await waitChannel(first, 1, 'set-done');
  const second = await connect(id, 'takeover=1');
  expect(await first.waitClose()).toEqual({ code: 4001, reason: 'TAKEN_OVER' });
  const f0 = await second.next();
  expect(f0.binary?.[0]).toBe(0x03);
  expect(f0.binary!.readBigUInt64BE(1)).toBe(0n);
  expect(f0.binary!.subarray(9).toString()).toContain('set-done');
  expect((await second.next()).text).toEqual({ type: 'connected', session_id: id, mode: 'pty' });
  stdin(second, 'echo "[$KEPT]"\n');
  await waitChannel(second, 1, '[by-first-client]');
  second.close();
});

test('takeover on a free session simply connects; six racing takeovers leave one holder and a live shell', async () => {
  const id = await createPty();
  const solo = await connect(id, 'takeover=1');
  await solo.nextJson('connected');
  solo.close();
  await solo.waitClose();
  const racers = await Promise.all(Array.from({ length: 6 }, () => connect(id, 'takeover=1')));
  await until(() => racers.filter((r) => !r.closed).length === 1, 5000);
  const winner = racers.find((r) => !r.closed)!;
  expect(racers.filter((r) => r.closed).every((r) => r.closed!.code === 4001)).toBe(true);
  await winner.nextJson('connected');
  stdin(winner, 'echo survivor\n');
  await waitChannel(winner, 1, 'survivor');
  winner.close();
});

test('reconnect with since= replays from that offset; since before the oldest byte is clamped and the header says where', async () => {
  const id = await createPty();
  const c = await connect(id);
  await c.nextJson('connected');
  stdin(c, 'echo replay-marker\n');
  await waitChannel(c, 1, 'replay-marker');
  // The echo and the output both carry the marker; the prompt after them may come in a later read (a
  // PTY host is one hop further): wait for all of it.
  await until(() => payloadText(c, 1).split('replay-marker').length > 2 && srv.app.manager.get(id)!.shellState === 'prompt');
  c.close();
  await c.waitClose();
  const offset = (await srv.api('GET', `/pty/${id}`, undefined, { token: null, headers: execdHeaders() })).body.output_offset;
  const again = await connect(id, 'since=0');
  const replay = await again.next();
  expect(replay.binary![0]).toBe(0x03);
  expect(replay.binary!.subarray(9).toString()).toContain('replay-marker');
  expect(replay.binary!.length - 9).toBe(offset);
  await again.nextJson('connected');
  // Past the end: no replay frame at all.
  again.close();
  await again.waitClose();
  const caughtUp = await connect(id, `since=${offset}`);
  expect((await caughtUp.next()).text.type).toBe('connected');
  // Flood more than the 64 KiB log holds, then ask for byte 0.
  stdin(caughtUp, "python3 -c \"import sys; sys.stdout.write('z' * 200000 + '\\n')\"; echo flood-$((1+1))-done\n");
  await waitChannel(caughtUp, 1, 'flood-2-done');
  caughtUp.close();
  await caughtUp.waitClose();
  const clamped = await connect(id, 'since=0');
  const f = await clamped.next();
  const start = Number(f.binary!.readBigUInt64BE(1));
  const now = (await srv.api('GET', `/pty/${id}`, undefined, { token: null, headers: execdHeaders() })).body.output_offset;
  expect(start).toBeGreaterThan(0);
  expect(start + f.binary!.length - 9).toBe(now);
  expect(now - start).toBeGreaterThanOrEqual(64 * 1024);
  clamped.close();
});

test('pty=0 pipe mode: no terminal, stdout and stderr on their own channels', async () => {
  const id = await createPty();
  const c = await connect(id, 'pty=0');
  expect(await c.nextJson('connected')).toEqual({ type: 'connected', session_id: id, mode: 'pipe' });
  stdin(c, 'echo to-out; echo to-err >&2; [ -t 0 ] && echo tty || echo notty\n');
  await waitChannel(c, 1, 'to-out');
  await waitChannel(c, 2, 'to-err');
  await waitChannel(c, 1, 'notty');
  expect(payloadText(c, 1)).not.toContain('to-err');
  expect(payloadText(c, 2)).not.toContain('to-out');
  stdin(c, 'exit 4\n');
  expect(await c.nextJson('exit')).toEqual({ type: 'exit', exit_code: 4 });
});

test('command: runs instead of a shell; the session ends with it', async () => {
  const id = await createPty({ command: 'echo from-command; exit 9' });
  const c = await connect(id);
  await c.nextJson('connected');
  expect(await c.nextJson('exit')).toEqual({ type: 'exit', exit_code: 9 });
  expect(payloadText(c, 1) + payloadText(c, 3)).toContain('from-command');
});

test('SIGINT reaches the foreground program and the shell survives', async () => {
  const id = await createPty();
  const c = await connect(id);
  await c.nextJson('connected');
  stdin(c, 'sleep 100\n');
  await sleep(300);
  c.sendJson({ type: 'signal', signal: 'SIGINT' });
  stdin(c, 'echo after-sigint\n');
  await waitChannel(c, 1, 'after-sigint\r\n');
  c.close();
});

test('DELETE: 200 with an empty body, then 404; cwd with $VAR and ~ is expanded and created', async () => {
  const dir = `/tmp/ptydeck-execd-${process.pid}/nested`;
  const id = await createPty({ cwd: '$HOME/../' + dir.slice(1).replace(/^/, '../'.repeat(8)) });
  const c = await connect(id);
  await c.nextJson('connected');
  stdin(c, 'pwd\n');
  await waitChannel(c, 1, dir);
  const del = await fetch(`${srv.url}/pty/${id}`, { method: 'DELETE', headers: execdHeaders() });
  expect(del.status).toBe(200);
  expect(await del.text()).toBe('');
  expect(await c.nextJson('exit')).toMatchObject({ type: 'exit' });
  const again = await fetch(`${srv.url}/pty/${id}`, { method: 'DELETE', headers: execdHeaders() });
  expect(again.status).toBe(404);
  const bad = await srv.api('POST', '/pty', { cwd: '$NO_SUCH_VARIABLE_PTYDECK/x' }, { token: null, headers: execdHeaders() });
  expect(bad.status).toBe(400);
  expect(bad.body.message).toMatch(/NO_SUCH_VARIABLE_PTYDECK is not defined/);
  const malformed = await srv.api('POST', '/pty', '{nope', { token: null, headers: execdHeaders() });
  expect(malformed).toMatchObject({ status: 400, body: { code: 'INVALID_REQUEST_BODY' } });
  const noCredential = await srv.api('POST', '/pty', {}, { token: null });
  expect(noCredential.status).toBe(401);
});
