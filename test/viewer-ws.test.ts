import { afterAll, beforeAll, expect, test } from 'vitest';
import { ViewerFlowControl } from '../src/shared/types';
import { startTestServer, sleep, testBackend, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/** The viewer's sockets and floor control, at the protocol level (the browser tests are in e2e/). */
let srv: TestServer;
let agentToken: string;
beforeAll(async () => {
  srv = await startTestServer();
  agentToken = (await srv.api('POST', '/api/tokens', { name: 'claude' })).body.token;
});
/** The agent's side of these tests: its own token (the person's credential is never refused by the floor). */
const agent = (method: string, path: string, body?: unknown) => srv.api(method, path, body, { token: agentToken });
afterAll(async () => {
  await srv.close();
});

const auth = () => ({ Authorization: `Bearer ${srv.token}` });
const view = (id: string) => WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view`, auth());
const binaryText = (c: WsClient) => c.frames.filter((f) => f.binary).map((f) => f.binary!.toString()).join('');
const ackAll = (c: WsClient) => c.sendJson({ type: 'ack', bytes: c.frames.filter((f) => f.binary).reduce((n, f) => n + f.binary!.length, 0) });

test('the events socket pushes sessions as agents create, use and close them', async () => {
  const events = await WsClient.open(`${srv.wsUrl}/api/events`, auth());
  const hello = await events.nextJson('hello');
  expect(Array.isArray(hello.sessions)).toBe(true);
  const sid = (await agent('POST', '/v2/pty/sessions', { id: 'pushed', cwd: '/tmp' })).body.data.session_id;
  const created = await events.next((f) => f.text?.type === 'session' && f.text.session.id === sid);
  expect(created.text.session).toMatchObject({ id: sid, owner: 'claude', origin: 'aio-v2', floor: 'watch', controller: 'agent', backend: testBackend, durable: testBackend !== 'native' });
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'false' });
  const finished = await events.next((f) => f.text?.type === 'session' && f.text.session.id === sid && f.text.session.command?.status === 'completed');
  expect(finished.text.session.command).toMatchObject({ command: 'false', exitCode: 1, source: 'exec' });
  await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
  expect(await events.nextJson('closed')).toEqual({ type: 'closed', id: sid });
  events.close();
});

test('two viewers beside the agent: each gets a snapshot, then the same live output', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo before-viewers' });
  // The exec answers when the command ends; the prompt after it may still be on its way (through tmux,
  // more so). Both viewers connect once it is drawn, so that neither gets it live and the other not.
  expect(await until(async () => /# $/.test(String((await srv.api('GET', `/api/sessions/${sid}/read?count=5`)).body.text ?? '')))).toBe(true);
  const a = await view(sid);
  const b = await view(sid);
  for (const v of [a, b]) {
    const snap = await v.nextJson('snapshot');
    expect(snap.data).toContain('before-viewers');
    expect(snap).toMatchObject({ cols: 80, rows: 24 });
  }
  const agent = await WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${sid}/ws`, auth());
  await agent.nextJson('ready');
  agent.sendJson({ type: 'input', data: 'echo seen-by-$((1+1))-viewers\n' });
  await until(() => binaryText(a).includes('seen-by-2-viewers') && binaryText(b).includes('seen-by-2-viewers'));
  expect(binaryText(a)).toBe(binaryText(b));
  for (const c of [a, b, agent]) c.close();
});

test('floor: watch keeps the viewer keyboard out, type lets both write, takeover refuses the agent with 423 while reads work', async () => {
  const sid = (await agent('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  const v = await view(sid);
  await v.nextJson('snapshot');
  v.sendJson({ type: 'input', data: 'echo nope\r' });
  expect((await v.nextJson('error')).message).toMatch(/watch mode/);

  expect((await srv.api('POST', `/api/sessions/${sid}/floor`, { mode: 'type' })).body.floor).toBe('type');
  v.sendJson({ type: 'input', data: 'echo person-typed-$((2+3))\r' });
  await until(async () => (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data.output === 'person-typed-5');
  expect((await agent('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo agent-too' })).body.data.output).toBe('agent-too');

  const taken = await srv.api('POST', `/api/sessions/${sid}/takeover`);
  expect(taken.body).toMatchObject({ floor: 'takeover', controller: 'person' });
  const refused = await agent('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo agent-blocked' });
  expect(refused.status).toBe(423);
  expect(refused.body.message).toMatch(/A person has taken control/);
  expect((await agent('POST', `/v2/pty/sessions/${sid}/input`, { input: 'x' })).status).toBe(423);
  expect((await agent('GET', `/v2/pty/sessions/${sid}/screen`)).status).toBe(200);
  expect((await srv.api('GET', '/v2/pty/sessions')).body.data.sessions[sid].controller).toBe('person');
  v.sendJson({ type: 'input', data: 'echo person-holds-floor\r' });
  await until(async () => (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data.output === 'person-holds-floor');

  expect((await srv.api('POST', `/api/sessions/${sid}/release`)).body).toMatchObject({ floor: 'watch', controller: 'agent' });
  expect((await agent('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo agent-back' })).body.data.output).toBe('agent-back');
  v.close();
});

test('interrupt sends ^C whatever the floor', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'sleep 60', async: true });
  await sleep(200);
  expect((await srv.api('POST', `/api/sessions/${sid}/interrupt`)).status).toBe(200);
  const w = await srv.api('POST', `/v2/pty/sessions/${sid}/wait`, { seconds: 5 });
  expect(w.body.data).toMatchObject({ status: 'completed', exit_code: 130 });
});

test('flow control: a viewer that does not ack stops at the watermark; acking lets it continue', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  const v = await view(sid);
  await v.nextJson('snapshot');
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: "python3 -c \"import sys; sys.stdout.write('w' * 1500000)\"" });
  await sleep(300);
  const received = () => v.frames.filter((f) => f.binary).reduce((n, f) => n + f.binary!.length, 0);
  const stuckAt = received();
  expect(stuckAt).toBeGreaterThan(0);
  expect(stuckAt).toBeLessThanOrEqual(ViewerFlowControl.HighWatermarkBytes + 64 * 1024);
  await sleep(300);
  expect(received()).toBe(stuckAt);
  ackAll(v);
  await until(() => received() > stuckAt);
  expect(received()).toBeGreaterThan(stuckAt);
  v.close();
});

test('a viewer far behind is resynced from a snapshot instead of being fed the backlog', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  const v = await view(sid);
  await v.nextJson('snapshot');
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: "python3 -c \"import sys; sys.stdout.write('r' * 5000000)\"; echo tail-marker-$((9*9))" });
  ackAll(v);
  const resync = await v.nextJson('resync');
  expect(resync.reason).toMatch(/behind/);
  await v.nextJson('snapshot');
  // What the viewer shows from its latest snapshot on. The marker may come after that snapshot: where the
  // backend's log trails the command's end (tmux reads pipe-pane files), the resync can come first.
  const shown = () => {
    const at = v.frames.findLastIndex((f) => f.text?.type === 'snapshot');
    return v.frames[at].text.data + v.frames.slice(at + 1).filter((f) => f.binary).map((f) => f.binary!.toString()).join('');
  };
  let acked = 0;
  const shows = await until(() => {
    const total = v.frames.filter((f) => f.binary).reduce((n, f) => n + f.binary!.length, 0);
    if (total > acked) v.sendJson({ type: 'ack', bytes: total - acked });
    acked = total;
    return shown().includes('tail-marker-81');
  });
  expect(shows).toBe(true);
  // Resynced, not fed: what it was sent after the flood is far less than the flood.
  expect(acked).toBeLessThan(5_000_000);
  v.close();
});

test('resize by a typing viewer reaches the PTY and every other viewer; a watching viewer may not resize', async () => {
  const sid = (await agent('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  const watcher = await view(sid);
  const typist = await view(sid);
  await watcher.nextJson('snapshot');
  await typist.nextJson('snapshot');
  typist.sendJson({ type: 'resize', cols: 100, rows: 30 });
  expect((await typist.nextJson('error')).message).toMatch(/watch mode/);
  await srv.api('POST', `/api/sessions/${sid}/floor`, { mode: 'type' });
  typist.sendJson({ type: 'resize', cols: 100, rows: 30 });
  expect(await watcher.nextJson('size')).toEqual({ type: 'size', cols: 100, rows: 30 });
  expect((await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'stty size' })).body.data.output).toBe('30 100');
  watcher.close();
  typist.close();
});
