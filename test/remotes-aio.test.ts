import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * An `aio` remote. No AIO Sandbox can run here, so ptydeck's own AIO door (wire-compatible: /v2/pty,
 * /v1/shell, the terminal WebSocket with its one-socket rule) stands in for one: `sandbox` below is a
 * ptydeck server that the deck speaks to only in the AIO dialect.
 */
let deck: TestServer;
let sandbox: TestServer;
let agentToken: string;

beforeAll(async () => {
  [deck, sandbox] = await Promise.all([startTestServer(), startTestServer()]);
  agentToken = (await sandbox.api('POST', '/api/tokens', { name: 'agent' })).body.token;
  const added = await deck.api('POST', '/api/remotes', { name: 'sandbox', url: sandbox.url, token: sandbox.token, kind: 'aio' });
  expect(added.status).toBe(201);
  expect(added.body.remote).toMatchObject({ name: 'sandbox', kind: 'aio' });
  await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes[0].state === 'online');
});

afterAll(async () => {
  await Promise.all([deck?.close(), sandbox?.close()]);
});

const enc = encodeURIComponent;
const deckSession = async (id: string) => (await deck.api('GET', '/api/sessions')).body.sessions.find((s: { id: string }) => s.id === id);
const deckView = (id: string) => WsClient.open(`${deck.wsUrl}/api/sessions/${enc(id)}/view`, { Authorization: `Bearer ${deck.token}` });
const binaryText = (c: WsClient) => c.frames.filter((f) => f.binary).map((f) => f.binary!.toString()).join('');
const agent = (method: string, path: string, body?: unknown) => sandbox.api(method, path, body, { token: agentToken });

async function terminal(id: string): Promise<void> {
  expect((await agent('POST', '/v2/pty/sessions', { id, cwd: '/tmp' })).status).toBe(200);
  await until(async () => await deckSession(`sandbox/${id}`));
}

test("the sandbox's terminals are tabs; a free one is watched and typed into through its WebSocket", async () => {
  await terminal('free');
  const s = await deckSession('sandbox/free');
  expect(s).toMatchObject({ id: 'sandbox/free', host: 'sandbox', owner: 'agent', origin: 'aio', floor: 'watch', remote: { kind: 'aio', id: 'free', floorControl: false } });

  await agent('POST', '/v2/pty/sessions/free/exec', { command: 'echo painted-$((5*5))' });
  const v = await deckView('sandbox/free');
  expect(await v.nextJson('snapshot')).toMatchObject({ cols: 80, rows: 24 });
  // AIO repaints the screen on attach.
  await until(() => binaryText(v).includes('painted-25'));
  await until(async () => (await deckSession('sandbox/free')).remote.watch === 'socket');

  v.sendJson({ type: 'input', data: 'echo nope\r' });
  expect((await v.nextJson('error')).message).toMatch(/watch mode/);
  const takeover = await deck.api('POST', `/api/sessions/${enc('sandbox/free')}/takeover`);
  expect(takeover.status).toBe(409);
  expect(takeover.body.error.message).toMatch(/no floor control/);
  expect((await deck.api('POST', `/api/sessions/${enc('sandbox/free')}/floor`, { mode: 'type' })).body).toMatchObject({ floor: 'type' });
  v.sendJson({ type: 'input', data: 'echo typed-on-aio-$((6*7))\r' });
  await until(async () => (await agent('GET', '/v2/pty/sessions/free/screen')).body.data.output === 'typed-on-aio-42');
  await until(() => binaryText(v).includes('typed-on-aio-42'));
  v.close();
  await until(async () => (await deckSession('sandbox/free')).remote.watch === undefined);
});

test("a terminal an agent holds is watched by polling its screen, and the agent's socket is never disturbed", async () => {
  await terminal('held');
  const agentSocket = await WsClient.open(`${sandbox.wsUrl}/v2/pty/sessions/held/ws`, { Authorization: `Bearer ${agentToken}` });
  expect(await agentSocket.nextJson('ready')).toMatchObject({ session_id: 'held', resumed: false });

  const v = await deckView('sandbox/held');
  await v.nextJson('snapshot');
  await until(async () => (await deckSession('sandbox/held')).remote.watch === 'polling');

  agentSocket.sendJson({ type: 'input', data: 'echo agent-says-$((2*21))\n' });
  await until(() => binaryText(v).includes('agent-says-42'));

  // The person types (REST input: no socket needed); the agent sees it on its own socket.
  await deck.api('POST', `/api/sessions/${enc('sandbox/held')}/floor`, { mode: 'type' });
  v.sendJson({ type: 'input', data: 'echo person-says-$((3*3))\r' });
  await agentSocket.waitForOutput('person-says-9');
  await until(() => binaryText(v).includes('person-says-9'));

  // Interrupt reaches the held terminal too.
  agentSocket.sendJson({ type: 'input', data: 'sleep 60\n' });
  await until(async () => (await agent('GET', '/v2/pty/sessions/held/screen')).body.data.status === 'running');
  expect((await deck.api('POST', `/api/sessions/${enc('sandbox/held')}/interrupt`)).body).toEqual({ id: 'sandbox/held', sent: '^C' });
  await until(async () => (await agent('GET', '/v2/pty/sessions/held/screen')).body.data.exit_code === 130);

  // Through all of it, the agent kept its socket: never replaced, never closed, still live.
  expect(agentSocket.closed).toBeNull();
  expect(agentSocket.frames.some((f) => f.text?.type === 'relay_replaced' || f.text?.type === 'error')).toBe(false);
  agentSocket.sendJson({ type: 'input', data: 'echo still-mine\n' });
  await agentSocket.waitForOutput('still-mine');

  // When the agent lets go, the deck takes the free socket at its next try.
  agentSocket.close();
  await until(async () => (await deckSession('sandbox/held')).remote.watch === 'socket', 15_000);
  v.close();
});

test('closing an aio tab closes the terminal on the sandbox; routes AIO cannot serve say so', async () => {
  await terminal('doomed');
  const exec = await deck.api('POST', `/api/sessions/${enc('sandbox/doomed')}/exec`, { command: 'true' });
  expect(exec.status).toBe(400);
  expect(exec.body.error.message).toMatch(/watch, type, interrupt and close/);
  expect((await deck.api('DELETE', `/api/sessions/${enc('sandbox/doomed')}`)).body).toMatchObject({ id: 'sandbox/doomed', closed: true });
  expect((await agent('GET', '/v2/pty/sessions/doomed')).status).toBe(404);
  expect(await deckSession('sandbox/doomed')).toBeUndefined();
  expect((await deck.api('GET', `/api/sessions/${enc('sandbox/doomed')}`)).status).toBe(404);
});

test('an aio endpoint that rejects the key shows the reason', async () => {
  await deck.api('POST', '/api/remotes', { name: 'badkey', url: sandbox.url, token: 'not-the-key', kind: 'aio' });
  const status = await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string; state: string }) => r.name === 'badkey' && r.state === 'unauthorized'));
  expect(status.reason).toMatch(/rejected the token \(401\)/);
  await deck.api('DELETE', '/api/remotes/badkey');
});
