import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test, onTestFinished } from 'vitest';
import { readStat } from '../src/main/terminal/processes';
import { allPids, commandLine } from '../src/main/terminal/processes';
import { startCliProcess, startTestServer, sleep, testBackend, until, type TestServer } from './helpers';
import { spawnServer } from './server-process';

/** Closing a session ends its whole process tree, and proves it (checked in /proc). */
let srv: TestServer;
let dir: string;
beforeAll(async () => {
  srv = await startTestServer({ PTYDECK_TEARDOWN_GRACE_MS: '800' });
  dir = mkdtempSync(join(tmpdir(), 'ptydeck-teardown-'));
});
afterAll(async () => {
  await srv.close();
  rmSync(dir, { recursive: true, force: true });
});

const alive = (pid: number): boolean => {
  const s = readStat(pid);
  return s !== null && s.state !== 'Z';
};
const pidFrom = async (file: string): Promise<number> => {
  await until(() => existsSync(file) && readFileSync(file, 'utf8').trim() !== '', 5000);
  return Number(readFileSync(file, 'utf8').trim());
};

test('a grandchild that ignores TERM and HUP is killed; the close reports no survivors', async () => {
  // A person's terminal reads ~/.bashrc: the test's own HOME has none (this machine's may take a minute).
  const created = await srv.api('POST', '/api/sessions', { cwd: '/tmp', env: { HOME: dir } });
  const sid = created.body.session?.id ?? expect.fail(JSON.stringify(created));
  const f = join(dir, 'grandchild.pid');
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, {
    command: `( trap '' TERM HUP INT; sh -c 'trap "" TERM HUP INT; echo $$ > ${f}; while :; do sleep 1; done' ) &`,
  });
  const grandchild = await pidFrom(f);
  expect(alive(grandchild)).toBe(true);
  const closed = await srv.api('DELETE', `/api/sessions/${sid}`);
  expect(closed.body).toMatchObject({ closed: true, survivors: [] });
  expect(alive(grandchild)).toBe(false);
});

test('a double-forked daemon in its own session is found by its environment and killed', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  const f = join(dir, 'daemon.pid');
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, {
    command: `( setsid sh -c 'trap "" TERM HUP INT; echo $$ > ${f}; exec 0</dev/null 1>/dev/null 2>&1; while :; do sleep 1; done' & )`,
  });
  const daemon = await pidFrom(f);
  const st = readStat(daemon)!;
  const shell = readStat(srv.app.manager.get(sid)!.pid!)!;
  expect(st.session).not.toBe(shell.session); // it escaped the shell's session
  expect(st.ppid).not.toBe(shell.pid); // and its parent
  const closed = await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
  expect(closed.body.data.survivors).toEqual([]);
  expect(alive(daemon)).toBe(false);
});

test('when the server exits, every remaining native session and its processes die with it', async () => {
  // tmux sessions are meant to outlive the server (see tmux.test.ts); this is about native ones.
  const server = await spawnServer(mkdtempSync(join(tmpdir(), 'ptydeck-exit-')), { AIO_SHELL_BACKEND: 'native' });
  // Also when the test fails or times out: nothing it started may outlive it.
  onTestFinished(() => server.close());
  const { url, token, home } = server;
  const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
  const pids: number[] = [];
  for (let i = 0; i < 2; i++) {
    const sid = (await (await fetch(`${url}/v2/pty/sessions`, { method: 'POST', headers, body: '{"cwd":"/tmp"}' })).json()).data.session_id;
    const f = join(dir, `exit-${i}.pid`);
    await fetch(`${url}/v2/pty/sessions/${sid}/exec`, { method: 'POST', headers, body: JSON.stringify({ command: `sh -c 'echo $$ > ${f}; exec sleep 1000' &` }) });
    pids.push(await pidFrom(f));
  }
  expect(pids.every(alive)).toBe(true);
  await server.stop('SIGTERM');
  await sleep(100);
  expect(pids.filter(alive)).toEqual([]);
  expect(existsSync(join(home, 'runtime.json'))).toBe(false);
});

/** Pids whose command line is exactly `sleep <marker>` (a unique duration names each test's process). */
const sleepers = (marker: string): number[] => allPids().filter((pid) => commandLine(pid) === `sleep ${marker}`);
const marker = (): string => `7773${Math.floor(Math.random() * 1e6)}.${Math.floor(Math.random() * 1e6)}`;

test('a process that sheds the environment tag, its session and its parent is still found, killed and reported', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  const [m1, m2] = [marker(), marker()];
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: `env -i setsid sh -c 'sleep ${m1} &'; env -u PTYDECK_SESSION setsid sh -c 'sleep ${m2} &'` });
  expect(await until(() => sleepers(m1).length === 1 && sleepers(m2).length === 1, 5000)).toBe(true);
  const escaped = [...sleepers(m1), ...sleepers(m2)];
  const closed = await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
  expect(closed.body.data.tracked_by).toMatch(/^cgroup[12]$/);
  const survivors = closed.body.data.survivors as { pid: number }[];
  // Whatever is still alive must be reported; nothing should be.
  expect(escaped.filter(alive).sort()).toEqual(survivors.map((s) => s.pid).filter((p) => escaped.includes(p)).sort());
  expect(escaped.filter(alive)).toEqual([]);
});

test.skipIf(testBackend === 'tmux')('after kill -9 of the server, the next start reaps what its native sessions left', async () => {
  const first = await startCliProcess();
  const home = first.home;
  let second: Awaited<ReturnType<typeof startCliProcess>> | null = null;
  const [m1, m2, m3] = [marker(), marker(), marker()];
  try {
    for (const command of [`env -i setsid sh -c 'sleep ${m1} &'`, `nohup sleep ${m2} >/dev/null 2>&1 &`, `(trap '' HUP; exec sleep ${m3}) &`]) {
      const sid = (await first.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
      await first.api('POST', `/v2/pty/sessions/${sid}/exec`, { command });
    }
    expect(await until(() => [m1, m2, m3].every((m) => sleepers(m).length === 1), 5000)).toBe(true);
    const left = [m1, m2, m3].flatMap(sleepers);
    await first.stop({ signal: 'SIGKILL', keepHome: true });
    await sleep(500);
    // Nothing killed them: the server died without a word.
    expect(left.filter(alive).length).toBeGreaterThan(0);
    second = await startCliProcess({}, home);
    expect(await until(() => left.every((p) => !alive(p)), 20_000), `still alive: ${left.filter(alive).map(commandLine).join(', ')}`).toBe(true);
  } finally {
    for (const pid of [m1, m2, m3].flatMap(sleepers)) process.kill(pid, 'SIGKILL');
    await second?.stop();
    rmSync(home, { recursive: true, force: true });
  }
}, 90_000);

test('without cgroups (PTYDECK_PROCESS_TRACKING=environment) the tree and the tag still work, and the answer says how processes were found', async () => {
  const plain = await startTestServer({ PTYDECK_TEARDOWN_GRACE_MS: '800', PTYDECK_PROCESS_TRACKING: 'environment' });
  try {
    const sid = (await plain.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
    const f = join(dir, 'plain.pid');
    await plain.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: `( setsid sh -c 'trap "" TERM HUP; echo $$ > ${f}; exec sleep 1000' & )` });
    const daemon = await pidFrom(f);
    const closed = await plain.api('DELETE', `/v2/pty/sessions/${sid}`);
    expect(closed.body.data).toMatchObject({ survivors: [], tracked_by: 'environment' });
    expect(alive(daemon)).toBe(false);
  } finally {
    await plain.close();
  }
});
