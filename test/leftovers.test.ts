import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { tmuxAvailability } from '../src/main/terminal/backends/tmux';
import { startTestServer } from './helpers';
import { collectLeftovers, markedProcesses, RUN_MARKER, selfAndAncestors } from './leftovers';

/**
 * The leftover check that fails a test run (test/global-setup.ts, e2e/global-setup.ts) really finds a
 * process carrying the run's marker, the marker really reaches the shells a server starts, and the test
 * helpers' close() really ends a durable session's processes.
 */
const alive = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

test('a process carrying the marker is found wherever it hides, and killed; one with another marker is not', async () => {
  const marker = `leftover-check-${process.pid}-${Date.now()}`;
  // Detached and in its own session: what a daemonised leftover looks like.
  const marked = spawn('sleep', ['300'], { detached: true, stdio: 'ignore', env: { ...process.env, [RUN_MARKER]: marker } });
  const other = spawn('sleep', ['300'], { detached: true, stdio: 'ignore', env: { ...process.env, [RUN_MARKER]: `${marker}-someone-else` } });
  try {
    expect(markedProcesses(marker).map((p) => p.pid)).toEqual([marked.pid]);
    const left = await collectLeftovers(marker, () => false, 0);
    expect(left.map((p) => [p.pid, p.cmdline])).toEqual([[marked.pid, 'sleep 300']]);
    await new Promise((r) => (marked.exitCode !== null || marked.signalCode !== null ? r(null) : marked.once('exit', r)));
    expect(marked.signalCode).toBe('SIGKILL');
    expect(markedProcesses(marker)).toEqual([]);
  } finally {
    marked.kill('SIGKILL');
    other.kill('SIGKILL');
  }
});

test('this process and its ancestors are told apart from leftovers', () => {
  const chain = selfAndAncestors();
  expect(chain.has(process.pid)).toBe(true);
  expect(chain.has(process.ppid)).toBe(true);
});

test('the run marker reaches the shells a server starts, on both backends', async () => {
  expect(process.env[RUN_MARKER], 'the global setup marks the run').toBeTruthy();
  const backends = tmuxAvailability().ok ? ['native', 'tmux'] : ['native'];
  for (const backend of backends) {
    const srv = await startTestServer({ AIO_SHELL_BACKEND: backend });
    onTestFinished(() => srv.close());
    try {
      const created = await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' });
      expect(created.body.data.backend).toBe(backend);
      const r = await srv.api('POST', `/v2/pty/sessions/${created.body.data.session_id}/exec`, { command: `echo "$${RUN_MARKER}"` });
      expect(r.body.data.output).toBe(process.env[RUN_MARKER]);
    } finally {
      await srv.close();
    }
  }
});

test("the test helpers' close() ends a durable session's shell, its output pipe and ptydeck's tmux server", async () => {
  if (!tmuxAvailability().ok) expect.fail(`tmux is required for this test (${tmuxAvailability().why}); .ci/run installs it`);
  const srv = await startTestServer({ AIO_SHELL_BACKEND: 'tmux' });
  onTestFinished(() => srv.close());
  let pids: number[] = [];
  try {
    const id = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
    const shell = Number((await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo $$' })).body.data.output);
    const socket = join(srv.home, 'tmux', 'server.sock');
    const tmuxServer = Number(execFileSync('tmux', ['-S', socket, 'display-message', '-p', '#{pid}'], { encoding: 'utf8' }).trim());
    const children = (pid: number) => readdirSync(`/proc/${pid}/task`).flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
    pids = [tmuxServer, ...children(tmuxServer)];
    expect(pids).toContain(shell);
    // The shell, and `split` writing its output segments.
    expect(pids.length).toBeGreaterThanOrEqual(3);
    expect(pids.every(alive)).toBe(true);
  } finally {
    await srv.close();
  }
  expect(pids.filter(alive)).toEqual([]);
});
