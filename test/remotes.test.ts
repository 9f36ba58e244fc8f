import { statSync, readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RemoteStore } from '../src/main/remotes/store';
import { fileSecretStore } from '../src/main/secret-store';
import { startTestServer, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * Remotes (src/main/remotes), ptydeck kind: three real ptydeck servers on loopback, each with its own home
 * and port. `deck` is the person's; `box` and `lab` run agents. Everything the deck shows and does for a
 * remote session goes through the remote's own API with the remote's token.
 */
let deck: TestServer;
let box: TestServer;
let lab: TestServer;
let boxAgent: string;
let labAgent: string;

beforeAll(async () => {
  [deck, box, lab] = await Promise.all([startTestServer(), startTestServer(), startTestServer()]);
  boxAgent = (await box.api('POST', '/api/tokens', { name: 'claude' })).body.token;
  labAgent = (await lab.api('POST', '/api/tokens', { name: 'codex' })).body.token;
  expect((await deck.api('POST', '/api/remotes', { name: 'box', url: box.url, token: box.token })).status).toBe(201);
  expect((await deck.api('POST', '/api/remotes', { name: 'lab', url: lab.url, token: lab.token })).status).toBe(201);
  await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.every((r: { state: string }) => r.state === 'online'));
});

afterAll(async () => {
  await Promise.all([deck?.close(), box?.close(), lab?.close()]);
});

const enc = encodeURIComponent;
const deckView = (id: string, query = '') => WsClient.open(`${deck.wsUrl}/api/sessions/${enc(id)}/view${query}`, { Authorization: `Bearer ${deck.token}` });
const binaryText = (c: WsClient) => c.frames.filter((f) => f.binary).map((f) => f.binary!.toString()).join('');
const deckSession = async (id: string) => (await deck.api('GET', '/api/sessions')).body.sessions.find((s: { id: string }) => s.id === id);

async function agentSession(srv: TestServer, token: string, id: string): Promise<string> {
  const res = await srv.api('POST', '/v2/pty/sessions', { id, cwd: '/tmp' }, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.session_id;
}

describe('remotes over the API', () => {
  test('the person adds, lists and removes remotes; the token is never answered back; agents get 403', async () => {
    const list = (await deck.api('GET', '/api/remotes')).body.remotes;
    expect(list.map((r: { name: string }) => r.name)).toEqual(['box', 'lab']);
    expect(list[0]).toMatchObject({ name: 'box', kind: 'ptydeck', url: box.url, insecure: false, state: 'online', reason: null, tokenHint: `…${box.token.slice(-4)}` });
    expect(JSON.stringify(list)).not.toContain(box.token);

    const agentToken = (await deck.api('POST', '/api/tokens', { name: 'nosy' })).body.token;
    for (const [method, path, body] of [
      ['GET', '/api/remotes', undefined],
      ['POST', '/api/remotes', { name: 'x', url: 'http://127.0.0.1:1', token: 't' }],
      ['DELETE', '/api/remotes/box', undefined],
      ['POST', '/api/remotes/box/retry', undefined],
    ] as const) {
      const res = await deck.api(method, path, body, { token: agentToken });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    // An agent of the deck sees none of the remotes' sessions, by listing or by id.
    await agentSession(box, boxAgent, 'hidden-from-deck-agents');
    await until(async () => await deckSession('box/hidden-from-deck-agents'));
    expect((await deck.api('GET', '/api/sessions', undefined, { token: agentToken })).body.sessions).toEqual([]);
    expect((await deck.api('GET', `/api/sessions/${enc('box/hidden-from-deck-agents')}`, undefined, { token: agentToken })).status).toBe(404);

    const file = join(deck.home, 'remotes.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toContain('"box"');
  });

  test('bad input is refused with a message naming what was wrong', async () => {
    const cases: [unknown, number, RegExp][] = [
      [{ name: 'Bad Name', url: 'http://127.0.0.1:1', token: 't' }, 400, /name .* lowercase/],
      [{ name: 'local', url: 'http://127.0.0.1:1', token: 't' }, 400, /reserved/],
      [{ name: 'x', url: 'ftp://127.0.0.1', token: 't' }, 400, /http:\/\/ or https:\/\//],
      [{ name: 'x', url: 'not a url', token: 't' }, 400, /not a URL/],
      [{ name: 'x', url: 'http://user:pw@127.0.0.1:1', token: 't' }, 400, /user or password/],
      [{ name: 'x', url: 'http://127.0.0.1:1/?a=1', token: 't' }, 400, /query/],
      [{ name: 'x', url: 'http://127.0.0.1:1', token: 'has space' }, 400, /token/],
      [{ name: 'x', url: 'http://127.0.0.1:1' }, 400, /token/],
      [{ name: 'x', url: 'http://127.0.0.1:1', token: 't', kind: 'ssh' }, 400, /kind/],
      [{ name: 'x', url: 'http://127.0.0.1:1', token: 't', ca: 'not pem' }, 400, /ca must be PEM/],
      [{ name: 'box', url: 'http://127.0.0.1:1', token: 't' }, 409, /exists already/],
      ['[1,2]', 400, /JSON object/],
    ];
    for (const [body, status, message] of cases) {
      const res = await deck.api('POST', '/api/remotes', body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.error.message).toMatch(message);
    }
    expect((await deck.api('DELETE', '/api/remotes/nope')).status).toBe(404);
  });

  test('plain http to a non-loopback address is refused unless the person says insecure', async () => {
    const refused = await deck.api('POST', '/api/remotes', { name: 'far', url: 'http://192.0.2.10:8791', token: 'tok' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/in clear.*https:\/\/.*ssh -N -L.*--insecure/s);
    const allowed = await deck.api('POST', '/api/remotes', { name: 'far', url: 'http://192.0.2.10:8791', token: 'tok', insecure: true });
    expect(allowed.status).toBe(201);
    expect(allowed.body.remote).toMatchObject({ name: 'far', insecure: true });
    // https is fine anywhere, and so is http to loopback.
    expect((await deck.api('POST', '/api/remotes', { name: 'tls', url: 'https://192.0.2.10', token: 'tok' })).status).toBe(201);
    for (const name of ['far', 'tls']) expect((await deck.api('DELETE', `/api/remotes/${name}`)).body).toEqual({ name, removed: true });
  });
});

describe('a remote ptydeck, full fidelity', () => {
  test("a remote agent's session shows in the deck's listing and events, under the remote's name", async () => {
    const events = await WsClient.open(`${deck.wsUrl}/api/events`, { Authorization: `Bearer ${deck.token}` });
    const hello = await events.nextJson('hello');
    expect(hello.sessions.every((s: { id: string; host?: string }) => !s.host || s.id.startsWith(`${s.host}/`))).toBe(true);
    const remotes = await events.nextJson('remotes');
    expect(remotes.remotes.map((r: { name: string; state: string }) => `${r.name}:${r.state}`)).toEqual(['box:online', 'lab:online']);

    await agentSession(box, boxAgent, 'build');
    await agentSession(lab, labAgent, 'build');
    const pushed = await events.next((f) => f.text?.type === 'session' && f.text.session.id === 'lab/build');
    expect(pushed.text.session).toMatchObject({ id: 'lab/build', host: 'lab', owner: 'codex', remote: { kind: 'ptydeck', id: 'build', floorControl: true } });
    events.close();

    // One id space: the same remote id on two hosts is two sessions.
    await until(async () => await deckSession('box/build'));
    const listed = (await deck.api('GET', '/api/sessions')).body.sessions;
    expect(listed.filter((s: { id: string }) => s.id.endsWith('/build')).map((s: { id: string; owner: string }) => `${s.id}:${s.owner}`).sort()).toEqual(['box/build:claude', 'lab/build:codex']);
    const one = await deck.api('GET', `/api/sessions/${enc('box/build')}`);
    expect(one.body).toMatchObject({ id: 'box/build', host: 'box', owner: 'claude', floor: 'watch', controller: 'agent' });
    expect((await deck.api('GET', `/api/sessions/${enc('box/no-such')}`)).status).toBe(404);
  });

  test('watching and typing from the deck reach the remote session', async () => {
    const sid = await agentSession(box, boxAgent, 'typed');
    await box.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo before-deck-$((3*4))' }, { token: boxAgent });
    await until(async () => await deckSession('box/typed'));
    const v = await deckView('box/typed');
    const snap = await v.nextJson('snapshot');
    expect(snap.data).toContain('before-deck-12');
    v.sendJson({ type: 'input', data: 'echo nope\r' });
    expect((await v.nextJson('error')).message).toMatch(/watch mode/);

    expect((await deck.api('POST', `/api/sessions/${enc('box/typed')}/floor`, { mode: 'type' })).body).toMatchObject({ id: 'box/typed', floor: 'type' });
    v.sendJson({ type: 'input', data: 'echo from-the-deck-$((6*7))\r' });
    await until(async () => (await box.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data.output === 'from-the-deck-42');
    await until(() => binaryText(v).includes('from-the-deck-42'));
    v.close();
  });

  test("take over from the deck: the remote's agent gets the remote's 423; release hands it back; interrupt sends ^C", async () => {
    const sid = await agentSession(lab, labAgent, 'held');
    await until(async () => await deckSession('lab/held'));
    const taken = await deck.api('POST', `/api/sessions/${enc('lab/held')}/takeover`);
    expect(taken.status).toBe(200);
    expect(taken.body).toMatchObject({ id: 'lab/held', host: 'lab', floor: 'takeover', controller: 'person' });
    const refused = await lab.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo agent-blocked' }, { token: labAgent });
    expect(refused.status).toBe(423);
    expect(refused.body.message).toMatch(/A person has taken control/);
    await until(async () => (await deckSession('lab/held'))?.refusals === 1);

    expect((await deck.api('POST', `/api/sessions/${enc('lab/held')}/release`)).body).toMatchObject({ floor: 'watch', controller: 'agent' });
    await lab.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'sleep 60', async: true }, { token: labAgent });
    expect((await deck.api('POST', `/api/sessions/${enc('lab/held')}/interrupt`)).body).toEqual({ id: 'lab/held', sent: '^C' });
    const waited = await lab.api('POST', `/v2/pty/sessions/${sid}/wait`, { seconds: 5 }, { token: labAgent });
    expect(waited.body.data).toMatchObject({ status: 'completed', exit_code: 130 });

    // The person's own calls through the deck act on the remote too (send, read, close).
    const sent = await deck.api('POST', `/api/sessions/${enc('lab/held')}/send`, { text: 'echo sent-through-deck', timeout_ms: 5000 });
    expect(sent.status).toBe(200);
    expect(sent.body.viewport).toContain('sent-through-deck');
    expect((await deck.api('GET', `/api/sessions/${enc('lab/held')}/read?count=5`)).body.text).toContain('sent-through-deck');
    expect((await deck.api('DELETE', `/api/sessions/${enc('lab/held')}`)).body).toMatchObject({ id: 'lab/held', closed: true });
    await until(async () => !(await deckSession('lab/held')));
    expect((await lab.api('GET', `/v2/pty/sessions/${sid}`)).status).toBe(404);
  });

  test("a remote session's timeline and recording are the remote's own, in the deck's ids", async () => {
    const sid = await agentSession(box, boxAgent, 'recorded');
    await box.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo timeline-$((2*21))' }, { token: boxAgent });
    await until(async () => await deckSession('box/recorded'));
    await deck.api('POST', `/api/sessions/${enc('box/recorded')}/takeover`);
    await deck.api('POST', `/api/sessions/${enc('box/recorded')}/release`);

    const page = await deck.api('GET', `/api/sessions/${enc('box/recorded')}/timeline?since=0`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    expect(page.body).toMatchObject({ session: 'box/recorded', live: true });
    const events = page.body.events as { kind: string; who: string; session: string; command?: string }[];
    expect(events.every((e) => e.session === 'box/recorded')).toBe(true);
    expect(events.some((e) => e.kind === 'command-started' && e.who === 'claude' && e.command?.includes('timeline-'))).toBe(true);
    // The deck's floor changes are the remote's person's (the deck holds the remote's admin token).
    expect(events.filter((e) => e.kind === 'floor').map((e) => e.who)).toEqual(['person', 'person']);
    expect((await deck.api('GET', `/api/sessions/${enc('box/recorded')}/timeline?since=nope`)).status).toBe(400);

    const cast = await fetch(`${deck.url}/api/sessions/${enc('box/recorded')}/recording`, { headers: { Authorization: `Bearer ${deck.token}` } });
    expect(cast.status).toBe(200);
    expect(cast.headers.get('content-type')).toMatch(/^application\/x-asciicast/);
    expect(cast.headers.get('content-disposition')).toBe('attachment; filename="box_recorded.cast"');
    const lines = (await cast.text()).trimEnd().split('\n');
    expect(JSON.parse(lines[0])).toMatchObject({ version: 2, ptydeck: { session: 'recorded', owner: 'claude' } });
    expect(lines.slice(1).some((l) => String(JSON.parse(l)[2]).includes('timeline-42'))).toBe(true);
    expect((await deck.api('GET', `/api/sessions/${enc('box/no-such')}/recording`)).status).toBe(404);
  });

  test('a view resumed with ?since= continues from exactly that byte: nothing lost, nothing doubled', async () => {
    const sid = await agentSession(box, boxAgent, 'resumable');
    await until(async () => await deckSession('box/resumable'));
    const first = await deckView('box/resumable');
    const snap = await first.nextJson('snapshot');
    await box.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo one-$((1+0))' }, { token: boxAgent });
    await until(() => binaryText(first).includes('one-1'));
    const seen = binaryText(first);
    const at = snap.offset + Buffer.byteLength(seen);
    first.close();
    await box.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo two-$((1+1))' }, { token: boxAgent });
    const again = await deckView('box/resumable', `?since=${at}`);
    expect(await again.nextJson('resume')).toMatchObject({ type: 'resume', offset: at });
    await until(() => binaryText(again).includes('two-2'));
    expect(binaryText(again)).not.toContain('one-1');
    again.close();
    // An offset the log does not hold gets a snapshot instead.
    const stale = await deckView('box/resumable', '?since=999999999');
    expect((await stale.nextJson('snapshot')).data).toContain('two-2');
    stale.close();
    const bad = await WsClient.open(`${deck.wsUrl}/api/sessions/${enc('box/resumable')}/view?since=-1`, { Authorization: `Bearer ${deck.token}` }).catch((e) => e);
    expect(bad.status).toBe(400);
  });

  test('a remote with a bad token shows the reason on its status; the other remotes are untouched', async () => {
    expect((await deck.api('POST', '/api/remotes', { name: 'badtoken', url: box.url, token: 'pdk_wrong' })).status).toBe(201);
    const status = await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string; state: string }) => r.name === 'badtoken' && r.state === 'unauthorized'));
    expect(status.reason).toMatch(/rejected the token \(401\)/);
    expect(status.retryAt).not.toBeNull();
    // An agent's token is refused too: the deck needs the remote's person token.
    const agentTok = (await box.api('POST', '/api/tokens', { name: 'lender' })).body.token;
    expect((await deck.api('POST', '/api/remotes', { name: 'agenttoken', url: box.url, token: agentTok })).status).toBe(201);
    const agentStatus = await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string; state: string }) => r.name === 'agenttoken' && r.state === 'unauthorized'));
    expect(agentStatus.reason).toMatch(/agent "lender".*admin/);
    expect((await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string }) => r.name === 'box').state).toBe('online');
    const proxied = await deck.api('GET', `/api/sessions/${enc('badtoken/build')}`);
    expect(proxied.status).toBe(502);
    expect(proxied.body.error.message).toMatch(/refused the deck \(401\)/);
    for (const n of ['badtoken', 'agenttoken']) await deck.api('DELETE', `/api/remotes/${n}`);
  });

  test('a remote that is down or silent shows offline with the reason; the local listing never waits for it', async () => {
    // Port 1: nothing listens there, so the connection is refused at once.
    expect((await deck.api('POST', '/api/remotes', { name: 'down', url: 'http://127.0.0.1:1', token: 'tok' })).status).toBe(201);
    // A server that accepts connections and never answers: the handshake times out.
    const silent = createServer(() => undefined);
    const sockets = new Set<Socket>();
    silent.on('connection', (c) => sockets.add(c));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    expect((await deck.api('POST', '/api/remotes', { name: 'silent', url: `http://127.0.0.1:${port}`, token: 'tok' })).status).toBe(201);
    try {
      const down = await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string; state: string }) => r.name === 'down' && r.state === 'offline'));
      expect(down.reason).toMatch(/connection refused/);
      // Meanwhile the deck answers as ever.
      expect((await deck.api('GET', '/api/sessions')).status).toBe(200);
      const proxied = await deck.api('POST', `/api/sessions/${enc('down/x')}/takeover`);
      expect(proxied.status).toBe(502);
      expect(proxied.body.error.message).toMatch(/Remote down did not answer: connection refused/);
      const quiet = await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string; state: string }) => r.name === 'silent' && r.state === 'offline'), 15000);
      expect(quiet.reason).toMatch(/no answer within 5 s/);
      expect((await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string }) => r.name === 'box').state).toBe('online');
    } finally {
      for (const n of ['down', 'silent']) await deck.api('DELETE', `/api/remotes/${n}`);
      for (const c of sockets) c.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  test('removing a remote drops its sessions from the deck and ends the views open on them', async () => {
    await agentSession(box, boxAgent, 'short-lived-view');
    expect((await deck.api('POST', '/api/remotes', { name: 'again', url: box.url, token: box.token })).status).toBe(201);
    await until(async () => await deckSession('again/short-lived-view'));
    const v = await deckView('again/short-lived-view');
    await v.nextJson('snapshot');
    const events = await WsClient.open(`${deck.wsUrl}/api/events`, { Authorization: `Bearer ${deck.token}` });
    await events.nextJson('hello');
    expect((await deck.api('DELETE', '/api/remotes/again')).body).toEqual({ name: 'again', removed: true });
    expect(await v.waitClose()).toMatchObject({ code: 1000, reason: 'remote removed' });
    expect(await events.nextJson('closed')).toEqual({ type: 'closed', id: expect.stringMatching(/^again\//) });
    expect(await deckSession('again/short-lived-view')).toBeUndefined();
    // The session itself runs on, on box.
    expect(await deckSession('box/short-lived-view')).toBeDefined();
    events.close();
  });

  test('a remote the CLI adds to the file (another process) reaches the running deck; so does its removal', async () => {
    const cliStore = new RemoteStore(deck.home, fileSecretStore);
    cliStore.add({ name: 'viacli', url: lab.url, token: lab.token });
    const status = await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string; state: string }) => r.name === 'viacli' && r.state === 'online'));
    expect(status.url).toBe(lab.url);
    cliStore.remove('viacli');
    await until(async () => !(await deck.api('GET', '/api/remotes')).body.remotes.some((r: { name: string }) => r.name === 'viacli'));
  });
});
