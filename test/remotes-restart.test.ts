import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startPtydeck, type Ptydeck } from '../src/main/app';
import { loadConfig } from '../src/main/config';
import { tmuxAvailability } from '../src/main/terminal/backends/tmux';
import { startTestServer, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * A remote that stops and comes back (same home, same port) while the deck watches one of its sessions.
 * The session must survive the remote's restart, so it runs on the tmux backend (a native session dies
 * with its server). The deck's tab stays open, says the remote is offline, and when it is back resumes
 * from the byte it had shown, through the remote's view socket `?since=`: the output printed meanwhile
 * arrives, once.
 */
let deck: TestServer;
let remote: Ptydeck | null = null;
let home: string;
let port = 0;

const startRemote = async (): Promise<Ptydeck> => {
  const config = loadConfig(
    { port: String(port) },
    { ...process.env, PTYDECK_TOKEN: '', PTYDECK_TEARDOWN_GRACE_MS: '1000', AIO_SHELL_BACKEND: 'tmux', PTYDECK_HOME: home },
  );
  const app = await startPtydeck(config);
  port = app.server.port;
  return app;
};
const remoteApi = async (method: string, path: string, body?: unknown, token = remote!.tokens.adminToken) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};

beforeAll(async () => {
  if (!tmuxAvailability().ok) expect.fail(`tmux is required for this test (${tmuxAvailability().why})`);
  home = mkdtempSync(join(tmpdir(), 'ptydeck-remote-restart-'));
  deck = await startTestServer();
  remote = await startRemote();
});

afterAll(async () => {
  // Ends what the test started: the durable session, the remote, its tmux server, the deck.
  if (remote) {
    await remoteApi('DELETE', '/api/sessions/survivor').catch(() => undefined);
    await remote.stop();
  }
  try {
    execFileSync('tmux', ['-S', join(home, 'tmux', 'server.sock'), 'kill-server'], { stdio: 'ignore' });
  } catch {
    // no tmux server left
  }
  rmSync(home, { recursive: true, force: true });
  await deck?.close();
});

const binary = (c: WsClient, from = 0) =>
  Buffer.concat(
    c.frames
      .slice(from)
      .filter((f) => f.binary)
      .map((f) => f.binary!),
  );
const count = (text: string, needle: string) => text.split(needle).length - 1;

test('the remote stops and restarts: its group shows offline, then the tab resumes with what was printed meanwhile, nothing doubled', async () => {
  const agentToken = (await remoteApi('POST', '/api/tokens', { name: 'worker' })).body.token;
  expect((await remoteApi('POST', '/v2/pty/sessions', { id: 'survivor', cwd: '/tmp' }, agentToken)).body.data.backend).toBe('tmux');
  expect((await deck.api('POST', '/api/remotes', { name: 'box', url: `http://127.0.0.1:${port}`, token: remote!.tokens.adminToken })).status).toBe(201);
  await until(async () => (await deck.api('GET', '/api/sessions')).body.sessions.some((s: { id: string }) => s.id === 'box/survivor'));

  const view = await WsClient.open(`${deck.wsUrl}/api/sessions/${encodeURIComponent('box/survivor')}/view`, { Authorization: `Bearer ${deck.token}` });
  const snap = await view.nextJson('snapshot');
  await remoteApi('POST', '/v2/pty/sessions/survivor/exec', { command: 'echo before-$((1+1))' }, agentToken);
  await until(() => binary(view).includes('before-2'));
  // Acks as a viewer does, so flow control never holds the stream back.
  view.sendJson({ type: 'ack', bytes: binary(view).length });

  // A job that prints while the remote is down, then the remote stops (tmux sessions keep running).
  await remoteApi('POST', '/v2/pty/sessions/survivor/exec', { command: 'for i in 1 2 3 4 5 6; do echo tick-$i; sleep 0.3; done; echo done-$((6*7))', async: true }, agentToken);
  await remote!.stop();
  remote = null;

  const offline = await view.nextJson('remote');
  expect(offline).toMatchObject({ type: 'remote', state: 'offline' });
  const status = await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { state: string }) => r.state === 'offline'));
  expect(status.reason).toMatch(/shut down|connection refused|dropped/);
  // The tab is kept while its remote is away.
  expect((await deck.api('GET', '/api/sessions')).body.sessions.some((s: { id: string }) => s.id === 'box/survivor')).toBe(true);
  view.sendJson({ type: 'input', data: 'x' });
  expect((await view.nextJson('error')).message).toMatch(/box is offline/);

  // Let the job finish while nobody can see it, then bring the remote back on the same home and port.
  await new Promise((r) => setTimeout(r, 2500));
  remote = await startRemote();
  // "Retry now" (the group's button): the events socket comes back, and the open tab with it.
  expect((await deck.api('POST', '/api/remotes/box/retry')).status).toBe(200);

  expect(await view.nextJson('remote', 30_000)).toMatchObject({ state: 'online' });
  const resumed = await view.nextJson('resume');
  const resumeAt = view.frames.findIndex((f) => f.text?.type === 'resume');
  await until(() => binary(view, resumeAt).includes('done-42'), 20_000);
  const text = binary(view).toString('utf8');
  for (const line of ['before-2', 'tick-1', 'tick-3', 'tick-6', 'done-42']) expect(count(text, line), line).toBe(1);

  // Exactly the remote's own bytes: a direct view from the first snapshot's offset sees the same stream.
  const direct = await WsClient.open(`ws://127.0.0.1:${port}/api/sessions/survivor/view?since=${snap.offset}`, { Authorization: `Bearer ${remote.tokens.adminToken}` });
  expect((await direct.nextJson('resume')).offset).toBe(snap.offset);
  await until(() => binary(direct).includes('done-42'));
  await until(() => binary(direct).length >= binary(view).length);
  expect(binary(view).equals(binary(direct).subarray(0, binary(view).length))).toBe(true);
  // It resumed from the byte after the last one the tab had shown.
  expect(resumed.offset).toBe(snap.offset + binary(view).length - binary(view, resumeAt).length);
  direct.close();
  view.close();
});
