import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, expect, test } from 'vitest';
import { acquireServerLock, lockPath, probeServerLock, ServerRunningError } from '../src/main/server-lock';
import { endHome, spawnServer, type ServerProcess } from './server-process';

/**
 * One server per PTYDECK_HOME: a second one is refused and names the first, which goes on untouched
 * (its runtime file, its sessions); a crashed holder's lock is taken over.
 */
const bin = join(__dirname, '..', 'bin', 'ptydeck.js');
const cli = (home: string, ...args: string[]) =>
  promisify(execFile)(process.execPath, [bin, ...args], { env: { ...process.env, PTYDECK_HOME: home, PTYDECK_TOKEN: '' }, encoding: 'utf8' }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

const started: ServerProcess[] = [];
const homes: string[] = [];
const newHome = () => {
  const h = mkdtempSync(join(tmpdir(), 'ptydeck-lock-'));
  homes.push(h);
  return h;
};
afterEach(async () => {
  for (const s of started.splice(0)) await s.close();
  for (const h of homes.splice(0)) endHome(h);
});

test('a second `ptydeck serve` on the same home is refused, names the running one, and harms nothing', async () => {
  const home = newHome();
  const first = await spawnServer(home, { AIO_SHELL_BACKEND: 'tmux' });
  started.push(first);
  const created = await fetch(`${first.url}/v2/pty/sessions`, { method: 'POST', headers: { Authorization: `Bearer ${first.token}`, 'Content-Type': 'application/json' }, body: '{"id":"keep-me","cwd":"/tmp"}' });
  expect(created.status).toBe(200);
  const runtimeBefore = readFileSync(join(home, 'runtime.json'), 'utf8');

  const second = await cli(home, 'serve', '--port', '0');
  expect(second.code).toBe(1);
  expect(second.stderr).toContain('another ptydeck server is already running on');
  expect(second.stderr).toContain(`pid ${first.proc.pid}`);
  expect(second.stderr).toContain(first.url);

  // The first server's runtime file, sessions and listing are as they were.
  expect(readFileSync(join(home, 'runtime.json'), 'utf8')).toBe(runtimeBefore);
  const url = await cli(home, 'url', '--api');
  expect(url).toMatchObject({ code: 0, stdout: `${first.url}\n` });
  const list = await cli(home, 'list');
  expect(list.stdout).toMatch(/^keep-me\tadmin\t/m);
}, 90_000);

test("a crashed server's lock and runtime file do not stop the next one, and the CLI says it is gone", async () => {
  const home = newHome();
  const crashed = await spawnServer(home, { AIO_SHELL_BACKEND: 'native' });
  await crashed.stop('SIGKILL');
  expect(existsSync(lockPath(home))).toBe(true);
  expect(existsSync(join(home, 'runtime.json'))).toBe(true);

  const token = await cli(home, 'token');
  expect(token.code).toBe(1);
  expect(token.stderr).toContain(`was left by pid ${crashed.proc.pid}, which is gone`);

  const next = await spawnServer(home, { AIO_SHELL_BACKEND: 'native' });
  started.push(next);
  expect((await cli(home, 'token')).stdout.trim()).toBe(next.token);
}, 90_000);

test('only the lock holder removes the runtime file: a refused server leaves it, the holder removes it on exit', async () => {
  const home = newHome();
  const first = await spawnServer(home, { AIO_SHELL_BACKEND: 'native' });
  started.push(first);
  expect((await cli(home, 'serve', '--port', '0')).code).toBe(1);
  expect(existsSync(join(home, 'runtime.json'))).toBe(true);
  await first.stop('SIGTERM');
  expect(existsSync(join(home, 'runtime.json'))).toBe(false);
  expect((await probeServerLock(home)).state).toBe('free');
}, 90_000);

test('servers that start together after a crash: exactly one takes the lock', async () => {
  const home = newHome();
  // A holder that dies without cleaning up: its socket file stays behind.
  const holder = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(lockPath(home))}, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((r) => holder.stdout!.once('data', r));
  holder.kill('SIGKILL');
  await new Promise((r) => holder.once('exit', r));
  expect(existsSync(lockPath(home))).toBe(true);

  const results = await Promise.allSettled(Array.from({ length: 6 }, () => acquireServerLock(home)));
  const won = results.filter((r) => r.status === 'fulfilled');
  const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
  expect(won.length).toBe(1);
  expect(refused.every((e) => e instanceof ServerRunningError)).toBe(true);
  expect(refused[0].message).toContain(`pid ${process.pid}`);
  await (won[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
  expect(existsSync(lockPath(home))).toBe(false);
  rmSync(home, { recursive: true, force: true });
});
