import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { HostClient } from '../src/main/terminal/host/host-client';
import { hostPaths } from '../src/main/terminal/host/host-paths';
import { stableGateDir } from '../src/main/terminal/line-gate-server';
import { readStat } from '../src/main/terminal/processes';
import { authFrame, FrameDecoder, FrameType, handleFrame, jsonFrame, parseChallenge } from '../src/main/terminal/host/protocol';
import { endHost, until } from './helpers';
import { ResumingClient } from './resuming-client';
import { spawnServer } from './server-process';

/**
 * The PTY host: terminals that outlive the server. A real `ptydeck serve` (default backend) is killed
 * with SIGKILL while a session streams and started again on the same home: the session is back with
 * its id and owner, and an execd client that resumes from the offset it had reached receives every
 * byte exactly once. And the host refuses whatever is not its own client, without falling over.
 */
const cli = join(__dirname, '..', 'out', 'main', 'cli.js');
let home: string;
let server: ChildProcess | null = null;

beforeAll(() => {
  if (!existsSync(cli)) expect.fail(`the CLI is not built (${cli}); npm test builds it first`);
  home = mkdtempSync(join(tmpdir(), 'ptydeck-host-'));
});
afterAll(async () => {
  if (server) await stopServer('SIGKILL');
  await endHost(home);
  rmSync(home, { recursive: true, force: true });
  // The last server here was killed with SIGKILL: its line gate's directory waits for a successor on this home, which none will be.
  rmSync(stableGateDir(home), { recursive: true, force: true });
});

async function startServer(): Promise<{ url: string; token: string }> {
  rmSync(join(home, 'runtime.json'), { force: true });
  const env: NodeJS.ProcessEnv = { ...process.env, PTYDECK_HOME: home, PTYDECK_TOKEN: '' };
  delete env.AIO_SHELL_BACKEND; // the default
  server = spawn(process.execPath, ['-e', `require(${JSON.stringify(cli)}).run(process.argv.slice(1))`, 'serve', '--port', '0'], { env, stdio: 'ignore' });
  // A bound for a server that never starts, not a speed: a loaded machine may take long.
  await until(() => existsSync(join(home, 'runtime.json')), 60000);
  return JSON.parse(readFileSync(join(home, 'runtime.json'), 'utf8'));
}

async function stopServer(signal: NodeJS.Signals): Promise<void> {
  const s = server!;
  s.kill(signal);
  if (s.exitCode === null && s.signalCode === null) await new Promise((r) => s.once('exit', r));
  server = null;
}

test('a server killed with SIGKILL mid-stream comes back with every session; a client resuming from its offset gets every byte once', async () => {
  let { url, token } = await startServer();
  const admin = (t: string) => ({ Authorization: `Bearer ${t}`, 'Content-Type': 'application/json' });
  const agent = (await (await fetch(`${url}/api/tokens`, { method: 'POST', headers: admin(token), body: '{"name":"builder"}' })).json()).token as string;
  const created = await (await fetch(`${url}/pty`, { method: 'POST', headers: { 'X-EXECD-ACCESS-TOKEN': agent, 'Content-Type': 'application/json' }, body: '{"cwd":"/tmp"}' })).json();
  const id = created.session_id as string;

  const client = new ResumingClient();
  await client.connect(url, agent, id);
  await client.ws.nextJson('connected');
  client.ws.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('for i in $(seq 1 400); do echo line-$i; sleep 0.005; done; echo DONE-$((40+2))\n')]));
  await until(() => /line-40\r\n/.test(client.text()), 10000, 10);

  // Mid-stream: the server dies without a chance to say anything.
  await stopServer('SIGKILL');
  client.ws.close();
  const hostPid = Number(readFileSync(hostPaths(home).lock, 'utf8').split(' ')[0]);
  expect(readStat(hostPid)).not.toBeNull();

  ({ url, token } = await startServer());
  const listed = await (await fetch(`${url}/api/sessions/${id}`, { headers: admin(agent) })).json();
  expect(listed).toMatchObject({ id, owner: 'builder', backend: 'host', durable: true, restored: true });
  await client.connect(url, agent, id);
  // (A loaded machine runs the loop slowly: the test's own timeout bounds the wait.)
  expect(await until(() => client.text().includes('DONE-42'), 80000, 20)).toBe(true);
  // The prompt after it may still be on its way: the client has everything once it reaches the log's end.
  const logEnd = async () => (await (await fetch(`${url}/pty/${id}`, { headers: { 'X-EXECD-ACCESS-TOKEN': agent } })).json()).output_offset as number;
  // The shell's next prompt ends with its B marker: once the client has it and holds the whole log, nothing
  // more comes (comparing offsets alone could pass before the prompt reached the log).
  const promptBack = () => client.text().slice(client.text().lastIndexOf('DONE-42')).includes('\x1b]633;B;');
  expect(await until(async () => promptBack() && reachedEnd(client.offset, await logEnd()), 20000, 50)).toBe(true);
  client.ws.close();

  expect(client.gaps).toEqual([]);
  // (The first line follows the shell's invisible command-start marker, so match lines, not whole rows.)
  const lines = [...client.text().matchAll(/line-\d+(?=\r\n)/g)].map((m) => m[0]);
  expect(lines).toEqual(Array.from({ length: 400 }, (_, i) => `line-${i + 1}`));
  // Nothing doubled anywhere: the bytes received are exactly the session's log.
  const output = await (await fetch(`${url}/pty/${id}`, { headers: { 'X-EXECD-ACCESS-TOKEN': agent } })).json();
  expect(client.offset).toBe(output.output_offset);
  // The same PTY host served both servers.
  expect(Number(readFileSync(hostPaths(home).lock, 'utf8').split(' ')[0])).toBe(hostPid);

  // A graceful stop leaves it running too; closing it for real ends it in the host.
  await stopServer('SIGTERM');
  ({ url, token } = await startServer());
  const exec = await (await fetch(`${url}/v2/pty/sessions/${id}/exec`, { method: 'POST', headers: admin(agent), body: '{"command":"echo third-life"}' })).json();
  expect(exec.data.output).toBe('third-life');
  expect((await fetch(`${url}/pty/${id}`, { method: 'DELETE', headers: { 'X-EXECD-ACCESS-TOKEN': agent } })).status).toBe(200);
  await stopServer('SIGTERM');
}, 150_000);

const reachedEnd = (got: number, end: number): boolean => got === end;

test("an agent's shell that ends after its server died: the PTY host removes the shell's scratch directory", async () => {
  const { url, token } = await startServer();
  const admin = (t: string) => ({ Authorization: `Bearer ${t}`, 'Content-Type': 'application/json' });
  const agent = (await (await fetch(`${url}/api/tokens`, { method: 'POST', headers: admin(token), body: '{"name":"tidy"}' })).json()).token as string;
  const created = await (await fetch(`${url}/v2/pty/sessions`, { method: 'POST', headers: admin(agent), body: '{"cwd":"/tmp"}' })).json();
  const id = created.data.session_id as string;
  // An agent's shell is gated: it keeps its rc directory for the gate's scratch files.
  const exec = await (await fetch(`${url}/v2/pty/sessions/${id}/exec`, { method: 'POST', headers: admin(agent), body: '{"command":"echo \\"$$ $__ptydeck_gate_scratch\\""}' })).json();
  const [pid, dir] = String(exec.data.output).trim().split(' ');
  expect(dir).toMatch(/ptydeck-rc-/);
  expect(existsSync(dir)).toBe(true);
  // The server dies; the session lives on in the PTY host, and nothing of the server's will remove the directory.
  await stopServer('SIGKILL');
  expect(existsSync(dir)).toBe(true);
  // The shell ends as a closed terminal ends it.
  process.kill(Number(pid), 'SIGHUP');
  expect(await until(() => !existsSync(dir), 10000)).toBe(true);
}, 60_000);

/** Connects to the host's socket as a raw client; resolves with the socket once connected. */
function rawConnect(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(hostPaths(home).socket);
    // Flowing, so the host's close is seen (a paused socket never reads the end).
    s.once('connect', () => resolve(s.resume()));
    s.once('error', reject);
  });
}

const closedByPeer = (s: Socket): Promise<void> => new Promise((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));

/** A raw client that answers the host's frames with `answer`, until the host closes it: the frame types it got. */
async function framesUntilClosed(answer: (type: FrameType, body: Buffer, socket: Socket) => void): Promise<FrameType[]> {
  const socket = await rawConnect();
  socket.on('error', () => undefined);
  const got: FrameType[] = [];
  const decoder = new FrameDecoder({
    frame: (type, body) => {
      got.push(type);
      answer(type, body, socket);
    },
    output: () => undefined,
  });
  socket.removeAllListeners('data');
  socket.on('data', (d: Buffer) => decoder.push(d));
  await closedByPeer(socket);
  return got;
}

test('the host drops whatever does not speak its protocol, and serves its clients on', async () => {
  const client = (await HostClient.connect(home, { start: true }))!;
  const pid = client.hostPid;

  // Not the protocol at all.
  const http = await rawConnect();
  http.on('error', () => undefined);
  http.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  await closedByPeer(http);

  // A frame header that announces 4 GiB.
  const huge = await rawConnect();
  huge.on('error', () => undefined);
  huge.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x02]));
  await closedByPeer(huge);

  // The handshake with the wrong secret.
  const got = await framesUntilClosed((type, body, socket) => {
    if (type === FrameType.Challenge) socket.write(authFrame(Buffer.alloc(32, 7), parseChallenge(body)!));
  });
  expect(got).toEqual([FrameType.Challenge]); // no WELCOME

  // Its own user's client (it has the secret) that sends a malformed frame about its terminal: that
  // connection is dropped, the terminal is kept for the next server, as after a crash.
  const spawnRequest = { id: 'malformed', file: '/bin/sh', args: ['-c', 'exec sleep 60'], cwd: '/tmp', env: {}, cols: 80, rows: 24, logBytes: 65536, record: null };
  for (const bad of [handleFrame(FrameType.Keep, 1, Buffer.alloc(3)), handleFrame(FrameType.Flow, 1, Buffer.alloc(2)), handleFrame(99 as FrameType, 1)]) {
    const seen = await framesUntilClosed((type, body, socket) => {
      if (type === FrameType.Challenge) socket.write(authFrame(Buffer.from(readFileSync(hostPaths(home).secret, 'utf8').trim(), 'hex'), parseChallenge(body)!));
      if (type === FrameType.Welcome) socket.write(Buffer.concat([jsonFrame(FrameType.Spawn, 1, { ...spawnRequest, id: `${spawnRequest.id}-${bad[4]}` }), bad]));
    });
    expect(seen.slice(0, 3)).toEqual([FrameType.Challenge, FrameType.Welcome, FrameType.Spawned]);
  }
  const kept = (await HostClient.connect(home, { start: false }))!;
  const malformed = kept.sessions.filter((x) => x.id.startsWith(spawnRequest.id));
  expect(malformed.length).toBe(3);
  for (const x of malformed) {
    const handle = kept.open({ spawned: () => undefined, output: () => undefined, exit: () => undefined, inputState: () => undefined });
    kept.attach(handle, x.id, 0);
    kept.release(handle);
  }
  kept.close();

  // A connection that says nothing is dropped once the handshake time is up.
  const silent = await rawConnect();
  silent.on('error', () => undefined);
  await closedByPeer(silent);

  // The host is the same process, and a real client still gets a terminal from it.
  const again = (await HostClient.connect(home, { start: false }))!;
  expect(again.hostPid).toBe(pid);
  expect(readStat(pid)).not.toBeNull();
  client.close();
  again.close();
}, 30000);

test('another user cannot connect to the host at all (the kernel refuses them at its private directory)', async () => {
  if (process.getuid?.() !== 0) return; // only root can arrange another user here
  const client = (await HostClient.connect(home, { start: true }))!;
  const script = `process.setgid('nogroup'); process.setuid('nobody'); require('net').connect(${JSON.stringify(hostPaths(home).socket)})
    .on('connect', () => { console.log('connected'); process.exit(0); })
    .on('error', (e) => { console.log(e.code); process.exit(0); });`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10000 });
  expect(r.stdout.trim()).toBe('EACCES');
  // And the host serves on.
  const again = (await HostClient.connect(home, { start: false }))!;
  expect(again.hostPid).toBe(client.hostPid);
  client.close();
  again.close();
});

test("the shells the host starts keep the user's environment exactly (its glibc tunables included)", async () => {
  const own = mkdtempSync(join(tmpdir(), 'ptydeck-host-env-'));
  const srv = await spawnServer(own, { GLIBC_TUNABLES: 'glibc.malloc.arena_max=4', AIO_SHELL_BACKEND: 'auto' });
  try {
    const headers = { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json' };
    const created = await (await fetch(`${srv.url}/v2/pty/sessions`, { method: 'POST', headers, body: '{"cwd":"/tmp"}' })).json();
    const id = created.data.session_id as string;
    const exec = await (await fetch(`${srv.url}/v2/pty/sessions/${id}/exec`, { method: 'POST', headers, body: '{"command":"echo \\"[$GLIBC_TUNABLES]\\""}' })).json();
    expect(String(exec.data.output).trim()).toBe('[glibc.malloc.arena_max=4]');
  } finally {
    await srv.close();
  }
}, 60_000);

test("a session that fails on its terminal's output is its own problem: the connection and the other terminals go on", async () => {
  const client = (await HostClient.connect(home, { start: true }))!;
  const errors: string[] = [];
  const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void errors.push(args.map(String).join(' ')));
  const spawnRequest = (id: string) => ({ id, file: '/bin/sh', args: ['-c', 'echo out-$0; exec sleep 60', id], cwd: '/tmp', env: {}, cols: 80, rows: 24, logBytes: 65536, record: null });
  try {
    let closed = false;
    client.onClose(() => (closed = true));
    const good: Buffer[] = [];
    let goodExit = false;
    const failing = client.open({ spawned: () => undefined, output: () => { throw new Error('this session cannot take output'); }, exit: () => undefined, inputState: () => undefined });
    const healthy = client.open({ spawned: () => undefined, output: (_offset, bytes) => void good.push(Buffer.from(bytes)), exit: () => void (goodExit = true), inputState: () => undefined });
    client.spawn(failing, spawnRequest(`fails-${process.pid}`));
    await until(() => errors.some((e) => e.includes('this session cannot take output')), 10_000);
    client.spawn(healthy, spawnRequest(`healthy-${process.pid}`));
    await until(() => Buffer.concat(good).includes(`out-healthy-${process.pid}`), 10_000);
    expect(Buffer.concat(good).toString()).toContain(`out-healthy-${process.pid}`);
    expect(errors.some((e) => e.includes("failed on its terminal's output"))).toBe(true);
    expect(closed).toBe(false);
    client.kill(healthy, 9);
    await until(() => goodExit, 10_000);
    expect(goodExit).toBe(true);
    client.kill(failing, 9);
  } finally {
    spy.mockRestore();
    client.close();
  }
}, 30_000);
