import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { startPtydeck } from '../src/main/app';
import { loadConfig } from '../src/main/config';
import { tmuxAvailability } from '../src/main/terminal/backends/tmux';
import { childNamed, sleep, startTestServer, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * The deck's server side: pausing and resuming agents, interrupting all of an agent's commands, the
 * floor lease, the agent's size given back on release, and glances for the overview. The floor lease
 * runs with a one-second lease here (PTYDECK_FLOOR_LEASE_SECS=1).
 */
let srv: TestServer;
let claude: string;
let codex: string;
beforeAll(async () => {
  srv = await startTestServer({ PTYDECK_FLOOR_LEASE_SECS: '1' });
  claude = (await srv.api('POST', '/api/tokens', { name: 'claude' })).body.token;
  codex = (await srv.api('POST', '/api/tokens', { name: 'codex' })).body.token;
});
afterAll(async () => {
  await srv.close();
});
// A test that failed half way must not leave agents paused for the next one.
afterEach(async () => {
  await srv.api('POST', '/api/resume', {});
});

const as = (token: string) => (method: string, path: string, body?: unknown) => srv.api(method, path, body, { token });
const open = async (token: string, body: Record<string, unknown> = {}): Promise<string> => {
  const res = await as(token)('POST', '/v2/pty/sessions', { cwd: '/tmp', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.session_id;
};
const summary = async (id: string) => (await srv.api('GET', `/api/sessions/${id}`)).body;
const auth = () => ({ Authorization: `Bearer ${srv.token}` });
/** A viewer of the person's: while one is connected, no floor lease runs. */
const viewerPage = () => WsClient.open(`${srv.wsUrl}/api/events`, auth());
/** Runs `fn` with a viewer connected, and waits until it is gone again, even when `fn` fails: a viewer left behind would keep every later lease from running. */
async function withViewer<T>(fn: () => Promise<T>): Promise<T> {
  const page = await viewerPage();
  try {
    return await fn();
  } finally {
    page.close();
    await page.waitClose();
  }
}

describe('pause and resume (the person only)', () => {
  test('pausing an agent takes over all its sessions and the ones it opens next; resume hands them back', () =>
    withViewer(async () => {
      const a = await open(claude);
      const b = await open(claude);
      const other = await open(codex);
      // Agents may not pause anyone, themselves included.
      for (const path of ['/api/pause', '/api/resume', '/api/interrupt']) {
        const refused = await as(claude)('POST', path, { agent: 'claude' });
        expect(refused.status, path).toBe(403);
        expect(refused.body.error.message).toMatch(/admin/);
      }
      const paused = await srv.api('POST', '/api/pause', { agent: 'claude' });
      expect(paused.status).toBe(200);
      expect(paused.body.agent).toBe('claude');
      expect([...paused.body.sessions].sort()).toEqual([a, b].sort());
      for (const id of [a, b]) expect(await summary(id)).toMatchObject({ floor: 'takeover', controller: 'person', floorReason: expect.stringMatching(/Paused by the person/) });
      expect(await summary(other)).toMatchObject({ floor: 'watch', controller: 'agent' });
      expect((await srv.api('GET', '/api/pause')).body).toEqual({ all: false, agents: ['claude'] });
      // The agent is refused everywhere, and a session it opens now starts held.
      expect((await as(claude)('POST', `/v2/pty/sessions/${a}/exec`, { command: 'echo nope' })).status).toBe(423);
      const later = await open(claude);
      expect(await summary(later)).toMatchObject({ floor: 'takeover', floorReason: expect.stringMatching(/claude/) });
      // The agent can read why.
      expect((await as(claude)('GET', `/api/sessions/${a}`)).body.floorReason).toMatch(/Paused by the person/);

      const resumed = await srv.api('POST', '/api/resume', { agent: 'claude' });
      expect([...resumed.body.sessions].sort()).toEqual([a, b, later].sort());
      for (const id of [a, b, later]) expect(await summary(id)).toMatchObject({ floor: 'watch', floorReason: null });
      expect((await as(claude)('POST', `/v2/pty/sessions/${a}/exec`, { command: 'echo back' })).body.data.output).toBe('back');
      expect((await srv.api('GET', '/api/pause')).body).toEqual({ all: false, agents: [] });
    }));

  test('pause everything holds every agent (never the person’s own terminal); resuming one leaves the others paused', () =>
    withViewer(async () => {
      const a = await open(claude);
      const b = await open(codex);
      // The person's own terminal (owner admin); through AIO's door, which does not read the person's rc file.
      const mine = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
      const all = await srv.api('POST', '/api/pause', {});
      expect(all.body.agent).toBeNull();
      expect(all.body.sessions).toEqual(expect.arrayContaining([a, b]));
      expect(all.body.sessions).not.toContain(mine);
      expect(await summary(mine)).toMatchObject({ owner: 'admin', floor: 'type' });
      await srv.api('POST', '/api/resume', { agent: 'codex' });
      expect((await summary(b)).floor).toBe('watch');
      expect((await summary(a)).floor).toBe('takeover');
      expect((await srv.api('GET', '/api/pause')).body).toMatchObject({ all: false, agents: expect.arrayContaining(['claude']) });
      await srv.api('POST', '/api/resume', {});
      expect((await summary(a)).floor).toBe('watch');
    }));

  test('interrupt stops every running command of one agent and no other', async () => {
    const a = await open(claude);
    const b = await open(claude);
    const other = await open(codex);
    for (const [id, token] of [[a, claude], [b, claude], [other, codex]] as const) {
      await as(token)('POST', `/v2/pty/sessions/${id}/exec`, { command: 'sleep 300', async: true });
    }
    for (const id of [a, b, other]) expect(await until(async () => (await summary(id)).shellState === 'busy')).toBe(true);
    // Busy comes a moment before sleep does (the approval hook asks first): interrupt once each runs.
    for (const id of [a, b, other]) expect(await until(() => childNamed(srv.app.manager.get(id)!.pid!, 'sleep'))).toBe(true);
    const res = await srv.api('POST', '/api/interrupt', { agent: 'claude' });
    expect([...res.body.sessions].sort()).toEqual([a, b].sort());
    for (const id of [a, b]) expect(await until(async () => (await summary(id)).shellState === 'prompt')).toBe(true);
    expect((await summary(other)).shellState).toBe('busy');
    await srv.api('POST', `/api/sessions/${other}/interrupt`);
  });

  test('bad bodies are refused and name the field', async () => {
    for (const body of [{ agent: 'admin' }, { agent: 'no spaces!' }, { agent: 5 }, { agent: '' }, { agent: null }]) {
      const res = await srv.api('POST', '/api/pause', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toMatch(/agent/);
    }
    expect((await srv.api('POST', '/api/pause', '[1]')).status).toBe(400);
    expect((await srv.api('GET', '/api/pause')).body).toEqual({ all: false, agents: [] });
  });
});

describe('the floor lease', () => {
  test('with no viewer of the person connected, a taken-over session returns to the agent, which can read why', async () => {
    const id = await open(claude);
    const taken = await srv.api('POST', `/api/sessions/${id}/takeover`);
    expect(taken.body.floor).toBe('takeover');
    // No page is open: the lease runs at once, and the listing says until when.
    expect(taken.body.floorLeaseExpiresAt).toEqual(expect.any(String));
    expect(await until(async () => (await summary(id)).floor === 'watch', 10000)).toBe(true);
    const s = await as(claude)('GET', `/api/sessions/${id}`);
    expect(s.body).toMatchObject({ controller: 'agent', floorLeaseExpiresAt: null, floorReason: expect.stringMatching(/no viewer of the person was connected for 1 s/) });
    expect((await as(claude)('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo free' })).body.data.output).toBe('free');
    // Its timeline says so too: ptydeck handed the floor back, and why.
    type Ev = { kind: string; mode?: string; who: string; reason?: string };
    const timeline = async () => (await as(claude)('GET', `/api/sessions/${id}/timeline`)).body.events as Ev[];
    expect(await until(async () => (await timeline()).some((e) => e.kind === 'floor' && e.mode === 'watch' && e.who === 'ptydeck' && /floor lease/.test(e.reason ?? '')))).toBe(true);
  });

  test('a connected viewer keeps the floor held; the lease starts when the last one leaves', async () => {
    const id = await open(claude);
    const page = await viewerPage();
    const view = await WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view`, auth());
    await srv.api('POST', `/api/sessions/${id}/takeover`);
    expect((await summary(id)).floorLeaseExpiresAt).toBeNull();
    // Two lease lengths with a viewer connected: nothing changes.
    await sleep(2500);
    expect(await summary(id)).toMatchObject({ floor: 'takeover', floorLeaseExpiresAt: null });
    page.close();
    await page.waitClose();
    await sleep(1500);
    // The terminal tab is a viewer too.
    expect((await summary(id)).floor).toBe('takeover');
    view.close();
    expect(await until(async () => (await summary(id)).floor === 'watch', 10000)).toBe(true);
  });
});

describe("the agent's size", () => {
  test('a person’s resize while typing is undone on release; an agent’s own resize stays', () =>
    withViewer(async () => {
      const id = await open(claude, { cols: 100, rows: 30 });
      await srv.api('POST', `/api/sessions/${id}/floor`, { mode: 'type' });
      const view = await WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view`, auth());
      await view.nextJson('snapshot');
      view.sendJson({ type: 'resize', cols: 70, rows: 20 });
      expect(await until(async () => (await summary(id)).cols === 70)).toBe(true);
      await srv.api('POST', `/api/sessions/${id}/release`);
      expect(await until(async () => (await summary(id)).cols === 100)).toBe(true);
      expect(await summary(id)).toMatchObject({ cols: 100, rows: 30 });

      // The person fits it again, then the agent picks a size of its own: release keeps the agent's.
      await srv.api('POST', `/api/sessions/${id}/floor`, { mode: 'type' });
      view.sendJson({ type: 'resize', cols: 60, rows: 15 });
      expect(await until(async () => (await summary(id)).cols === 60)).toBe(true);
      await as(claude)('PATCH', `/v2/pty/sessions/${id}`, { cols: 132, rows: 40 });
      await srv.api('POST', `/api/sessions/${id}/release`);
      await sleep(300);
      expect(await summary(id)).toMatchObject({ cols: 132, rows: 40 });
      view.close();
      await view.waitClose();
    }));
});

describe('the deck socket', () => {
  test('sends the pause state, then glances of the sessions asked for, in colour', async () => {
    const id = await open(claude);
    await as(claude)('POST', `/v2/pty/sessions/${id}/exec`, { command: "printf '\\033[31mred-%s\\033[0m plain\\n' alert" });
    const deck = await WsClient.open(`${srv.wsUrl}/api/deck`, auth());
    expect(await deck.nextJson('deck')).toEqual({ type: 'deck', paused: { all: false, agents: [] } });
    deck.sendJson({ type: 'glances', ids: [id] });
    const glance = (await deck.nextJson('glance')).glance;
    expect(glance).toMatchObject({ id, cols: 80, rows: 24 });
    const text = glance.lines.map((runs: { t: string }[]) => runs.map((r) => r.t).join('')).join('\n');
    expect(text).toContain('red-alert plain');
    const red = glance.lines.flat().find((r: { t: string }) => r.t.includes('red-alert'));
    expect(red.fg).toBe(1);
    // A change sends another glance; an unchanged screen sends nothing.
    await as(claude)('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo second-look' });
    const next = (await deck.next((f) => f.text?.type === 'glance' && JSON.stringify(f.text.glance.lines).includes('second-look'))).text.glance;
    expect(next.id).toBe(id);
    // Pausing shows on the socket.
    await srv.api('POST', '/api/pause', { agent: 'claude' });
    expect((await deck.nextJson('deck')).paused).toEqual({ all: false, agents: ['claude'] });
    await srv.api('POST', '/api/resume', { agent: 'claude' });
    deck.sendJson({ type: 'glances', ids: 'nope' });
    expect((await deck.nextJson('error')).message).toMatch(/"ids"/);
    deck.sendJson({ type: 'subscribe' });
    expect((await deck.nextJson('error')).message).toMatch(/unknown deck frame type "subscribe"/);
    deck.close();
  });

  test('an agent may not open it', async () => {
    await expect(WsClient.open(`${srv.wsUrl}/api/deck`, { Authorization: `Bearer ${claude}` })).rejects.toMatchObject({ status: 403 });
  });
});

test('listings count the person’s viewers apart from other clients', async () => {
  const id = await open(claude);
  const agentSocket = await WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${id}/ws`, { Authorization: `Bearer ${claude}` });
  await agentSocket.nextJson('ready');
  const view = await WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view`, auth());
  await view.nextJson('snapshot');
  expect(await until(async () => (await summary(id)).attached === 2)).toBe(true);
  expect((await summary(id)).viewers).toBe(1);
  view.close();
  agentSocket.close();
});

describe('after a restart', () => {
  // The PTY host is the default durable backend; tmux is the other.
  test.each(['host', 'tmux'])('a durable session (%s) the person held, with no viewer back, returns to the agent when the lease runs out', async (backend) => {
    if (backend === 'tmux' && !tmuxAvailability().ok) return expect.fail(`tmux is required (${tmuxAvailability().why})`);
    const home = mkdtempSync(join(tmpdir(), 'ptydeck-deck-restart-'));
    const config = () => loadConfig({ port: '0' }, { ...process.env, PTYDECK_TOKEN: '', PTYDECK_HOME: home, AIO_SHELL_BACKEND: backend, PTYDECK_FLOOR_LEASE_SECS: '1' });
    const call = async (url: string, token: string, method: string, path: string, body?: unknown) => {
      const r = await fetch(url + path, { method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: r.status, body: await r.json() };
    };
    let first = await startPtydeck(config());
    try {
      const url = first.server.url;
      const admin = first.tokens.adminToken;
      const agent = (await call(url, admin, 'POST', '/api/tokens', { name: 'keeper' })).body.token;
      const id = (await call(url, agent, 'POST', '/v2/pty/sessions', { cwd: '/tmp', title: 'held across a restart' })).body.data.session_id;
      // A page holds the floor (so no lease runs), then ptydeck stops with the session held.
      const page = await WsClient.open(`${url.replace(/^http/, 'ws')}/api/events`, { Authorization: `Bearer ${admin}` });
      expect((await call(url, admin, 'POST', `/api/sessions/${id}/takeover`)).body.floor).toBe('takeover');
      page.close();
      await first.stop();
      first = await startPtydeck(config());
      const url2 = first.server.url;
      const back = await call(url2, admin, 'GET', `/api/sessions/${id}`);
      expect(back.body).toMatchObject({ backend, restored: true, title: 'held across a restart', titleSource: 'set' });
      expect(await until(async () => (await call(url2, admin, 'GET', `/api/sessions/${id}`)).body.floor === 'watch', 10000)).toBe(true);
      expect((await call(url2, agent, 'GET', `/api/sessions/${id}`)).body.floorReason).toMatch(/floor lease/);
      await call(url2, admin, 'DELETE', `/api/sessions/${id}`);
    } finally {
      // Ends the PTY host and ptydeck's tmux server too.
      await first.stop('end-everything');
      const sock = join(home, 'tmux', 'server.sock');
      if (existsSync(sock)) {
        try {
          execFileSync('tmux', ['-S', sock, 'kill-server'], { stdio: 'ignore' });
        } catch {
          // no server left
        }
      }
      rmSync(home, { recursive: true, force: true });
    }
  });
});
