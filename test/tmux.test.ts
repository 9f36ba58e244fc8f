import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test, onTestFinished } from 'vitest';
import { tmuxAvailability } from '../src/main/terminal/backends/tmux';
import { tmuxSessionName } from '../src/main/terminal/backends/tmux-backend';
import { sleep } from './helpers';
import { cliPath, endHome, spawnServer, type ServerProcess } from './server-process';
import { WsClient } from './ws-client';

/**
 * Terminals that outlive ptydeck: a real `ptydeck serve` process is killed with SIGKILL mid-build and
 * started again on the same home; its tmux sessions come back with their ids, owners and output.
 */
let home: string;
let server: ServerProcess | null = null;

/** One server at a time on this home (a second one would be refused): the previous one is stopped first. */
async function startServer(): Promise<{ url: string; token: string }> {
  if (server) await killServer('SIGTERM');
  server = await spawnServer(home, { AIO_SHELL_BACKEND: 'tmux' });
  return server;
}

async function killServer(signal: NodeJS.Signals): Promise<void> {
  await server!.stop(signal);
  server = null;
}

const tmux = (...args: string[]) => execFileSync('tmux', ['-S', join(home, 'tmux', 'server.sock'), ...args], { encoding: 'utf8' });

beforeAll(() => {
  if (!existsSync(cliPath)) expect.fail(`the CLI is not built (${cliPath}); npm test builds it first`);
  if (!tmuxAvailability().ok) expect.fail(`tmux is required for these tests (${tmuxAvailability().why}); .ci/run installs it`);
  home = mkdtempSync(join(tmpdir(), 'ptydeck-tmux-'));
});
afterAll(async () => {
  // Ends the server and the tmux sessions it kept, and deletes the home.
  if (server) await server.close();
  else endHome(home);
});

test('a tmux session outlives kill -9 of ptydeck with nothing lost; an ended one is reported ended', async () => {
  let { url, token } = await startServer();
  const admin = (t: string) => ({ Authorization: `Bearer ${t}`, 'Content-Type': 'application/json' });
  const agentToken = (await (await fetch(`${url}/api/tokens`, { method: 'POST', headers: admin(token), body: '{"name":"builder"}' })).json()).token as string;
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(url + path, { method, headers: admin(agentToken), body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: await r.json() };
  };

  const created = await call('POST', '/v2/pty/sessions', { id: 'build', cwd: '/tmp' });
  expect(created.body.data).toMatchObject({ session_id: 'build', backend: 'tmux', owner: 'builder' });
  await call('POST', '/v2/pty/sessions', { id: 'doomed', cwd: '/tmp' });
  // An agent's shell is gated, and keeps its rc directory for the gate's scratch files while it runs.
  const scratchOf = async (id: string) => String((await call('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo $__ptydeck_gate_scratch' })).body.data.output).trim();
  const rcDir = await scratchOf('build');
  expect(rcDir).toMatch(/ptydeck-rc-/);
  const doomedRcDir = await scratchOf('doomed');
  expect(doomedRcDir).toMatch(/ptydeck-rc-/);
  await call('POST', '/v2/pty/sessions/build/exec', { command: 'for i in $(seq 1 20); do echo step $i; sleep 0.2; done', async: true });
  await sleep(1200);

  await killServer('SIGKILL');
  // While ptydeck is down, the build goes on, and one session's pane disappears.
  tmux('kill-session', '-t', `=${tmuxSessionName('doomed')}`);
  await sleep(500);

  ({ url, token } = await startServer());
  const listed = await call('GET', '/v2/pty/sessions');
  expect(listed.status).toBe(200);
  expect(listed.body.data.sessions.build).toMatchObject({ session_id: 'build', owner: 'builder', backend: 'tmux' });
  const summary = (await call('GET', '/api/sessions/build')).body;
  expect(summary).toMatchObject({ durable: true, restored: true, owner: 'builder' });
  const doomed = (await call('GET', '/api/sessions/doomed')).body;
  expect(doomed.shellState).toBe('exited');

  // The command that was running when ptydeck died is still followed to its end.
  const waited = await call('POST', '/v2/pty/sessions/build/wait', { seconds: 15 });
  expect(waited.body.data).toMatchObject({ status: 'completed', exit_code: 0 });
  const page = (await call('GET', '/api/sessions/build/read?count=100')).body.text as string;
  const steps = page.split('\n').filter((l) => /^step \d+$/.test(l));
  expect(steps).toEqual(Array.from({ length: 20 }, (_, i) => `step ${i + 1}`));

  const next = await call('POST', '/v2/pty/sessions/build/exec', { command: 'echo after-restart; (exit 4)' });
  expect(next.body, JSON.stringify(next.body)).toMatchObject({ data: { status: 'completed', output: 'after-restart', exit_code: 4 } });
  // Markers from before the restart were recognised: the console holds the build too.
  expect(next.body.data.console.map((c: { output: string }) => c.output).join('\n')).toContain('step 20');

  // A graceful stop leaves tmux sessions running too, and they come back; one whose shell ended while
  // ptydeck was down keeps nothing of its own in the temporary directory.
  await killServer('SIGTERM');
  expect(existsSync(doomedRcDir)).toBe(false);
  ({ url, token } = await startServer());
  const again = await call('POST', '/v2/pty/sessions/build/exec', { command: 'echo third-life' });
  expect(again.body.data?.output, JSON.stringify(again.body)).toBe('third-life');
  expect(existsSync(rcDir)).toBe(true);

  // Closing it for real ends the tmux session and removes its files.
  expect((await call('DELETE', '/v2/pty/sessions/build')).body.success).toBe(true);
  expect(() => tmux('has-session', '-t', `=${tmuxSessionName('build')}`)).toThrow();
  expect(existsSync(join(home, 'tmux', tmuxSessionName('build')))).toBe(false);
  // The server that adopted it removes the directory the first one made.
  expect(existsSync(rcDir)).toBe(false);
}, 90000);

test('an implicit session (exec without id), an expiring one and an anonymous socket use the native PTY', async () => {
  const { url, token } = await startServer();
  const h = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
  const implicit = await (await fetch(`${url}/v1/shell/exec`, { method: 'POST', headers: h, body: '{"command":"true"}' })).json();
  const expiring = await (await fetch(`${url}/v2/pty/sessions`, { method: 'POST', headers: h, body: '{"retention":"expiring"}' })).json();
  const explicit = await (await fetch(`${url}/v2/pty/sessions`, { method: 'POST', headers: h, body: '{}' })).json();
  const list = (await (await fetch(`${url}/v2/pty/sessions`, { headers: h })).json()).data.sessions;
  expect(list[implicit.data.session_id].backend).toBe('native');
  expect(list[expiring.data.session_id].backend).toBe('native');
  expect(list[explicit.data.session_id].backend).toBe('tmux');
  const anonymous = await WsClient.open(`${url.replace(/^http/, 'ws')}/v2/pty/ws`, { Authorization: `Bearer ${token}` });
  expect((await anonymous.nextJson('ready')).backend).toBe('native');
  anonymous.close();
  await killServer('SIGTERM');
}, 90_000);

test("a session's output segments on disk are readable only by the user (0600)", async () => {
  const { url, token } = await startServer();
  const h = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
  const sid = (await (await fetch(`${url}/v2/pty/sessions`, { method: 'POST', headers: h, body: '{"cwd":"/tmp"}' })).json()).data.session_id;
  await fetch(`${url}/v2/pty/sessions/${sid}/exec`, { method: 'POST', headers: h, body: '{"command":"echo secret-output"}' });
  const dir = join(home, 'tmux', tmuxSessionName(sid));
  const segments = readdirSync(dir).filter((n) => n.startsWith('seg.'));
  expect(segments.length).toBeGreaterThan(0);
  expect(segments.map((n) => [n, (statSync(join(dir, n)).mode & 0o777).toString(8)])).toEqual(segments.map((n) => [n, '600']));
  await fetch(`${url}/v2/pty/sessions/${sid}`, { method: 'DELETE', headers: h });
  await killServer('SIGTERM');
});

test('AIO_SHELL_BACKEND=tmux without a tmux binary: explicit creation answers 503, implicit sessions still work', async () => {
  // A PATH with no tmux on it (bash is found by its absolute path; node by its own).
  const noTmux = await spawnServer(mkdtempSync(join(tmpdir(), 'ptydeck-notmux-')), { PATH: '/nonexistent', AIO_SHELL_BACKEND: 'tmux' });
  // Also when the test fails or times out: nothing it started may outlive it.
  onTestFinished(() => noTmux.close());
  const { url, token } = noTmux;
  const h = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
  const explicit = await fetch(`${url}/v2/pty/sessions`, { method: 'POST', headers: h, body: '{}' });
  expect(explicit.status).toBe(503);
  expect((await explicit.json()).message).toMatch(/tmux/);
  const implicit = await (await fetch(`${url}/v1/shell/exec`, { method: 'POST', headers: h, body: '{"command":"echo native-ok"}' })).json();
  expect(implicit.data.output).toBe('native-ok');
}, 90_000);

test('stopping the server says which sessions end and which tmux sessions are kept running', async () => {
  const own = await spawnServer(mkdtempSync(join(tmpdir(), 'ptydeck-stop-')), { AIO_SHELL_BACKEND: 'tmux' });
  // Also when the test fails or times out: nothing it started may outlive it.
  onTestFinished(() => own.close());
  const h = { Authorization: `Bearer ${own.token}`, 'Content-Type': 'application/json' };
  await fetch(`${own.url}/v2/pty/sessions`, { method: 'POST', headers: h, body: '{"id":"kept-one","cwd":"/tmp"}' });
  const implicit = (await (await fetch(`${own.url}/v1/shell/exec`, { method: 'POST', headers: h, body: '{"command":"true"}' })).json()).data.session_id;
  await own.stop('SIGINT');
  expect(own.output()).toContain(
    `ptydeck: SIGINT: ending 1 session and its processes (${implicit}); keeping 1 tmux session running (kept-one): it comes back when ptydeck starts again`,
  );
  const sock = join(own.home, 'tmux', 'server.sock');
  expect(execFileSync('tmux', ['-S', sock, 'list-sessions', '-F', '#{session_name}'], { encoding: 'utf8' }).trim()).toBe(tmuxSessionName('kept-one'));
}, 90_000);
