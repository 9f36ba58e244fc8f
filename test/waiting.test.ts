import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { sleep, startTestServer, until, type TestServer } from './helpers';

/**
 * "Waiting for input" as the viewer shows it: a program that asks a question (with the line it asks
 * on), not a full-screen program between two redraws; and no flapping.
 */
let srv: TestServer;
let claude: string;
beforeAll(async () => {
  srv = await startTestServer();
  claude = (await srv.api('POST', '/api/tokens', { name: 'claude' })).body.token;
});
afterAll(async () => {
  await srv.close();
});

const as = (method: string, path: string, body?: unknown) => srv.api(method, path, body, { token: claude });
const summary = async (id: string) => (await srv.api('GET', `/api/sessions/${id}`)).body;
const open = async (): Promise<string> => (await as('POST', '/v2/pty/sessions', { cwd: '/tmp', cols: 100, rows: 30 })).body.data.session_id;

const has = (program: string): boolean => {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

test('a read -p question is waiting for input, with its prompt line; the answer ends the wait', async () => {
  const id = await open();
  await as('POST', `/v2/pty/sessions/${id}/exec`, { command: 'read -p "Deploy to prod? [y/N] " answer; echo "answered $answer"', async: true });
  expect(await until(async () => (await summary(id)).waitingForInput, 15000)).toBe(true);
  expect((await summary(id)).prompt).toBe('Deploy to prod? [y/N]');
  await as('POST', `/v2/pty/sessions/${id}/input`, { input: 'y', press_enter: true });
  expect(await until(async () => !(await summary(id)).waitingForInput, 15000)).toBe(true);
  expect(await summary(id)).toMatchObject({ prompt: null, shellState: 'prompt' });
});

test('a question on the line above a bare cursor is the prompt', async () => {
  const id = await open();
  await as('POST', `/v2/pty/sessions/${id}/exec`, { command: 'printf "Overwrite build/out.bin?\\n"; read answer', async: true });
  expect(await until(async () => (await summary(id)).waitingForInput, 15000)).toBe(true);
  expect((await summary(id)).prompt).toBe('Overwrite build/out.bin?');
  await as('POST', `/v2/pty/sessions/${id}/input`, { input: 'n', press_enter: true });
});

test('top redraws by itself: it is running, never waiting, for the whole time it runs', async () => {
  if (!has('top')) return expect.fail('top (procps) is needed for this test');
  const id = await open();
  await as('POST', `/v2/pty/sessions/${id}/exec`, { command: 'top -d 1', async: true });
  expect(await until(async () => (await summary(id)).shellState === 'busy')).toBe(true);
  // Long enough for several redraws and several looks of the monitor, and past its longest hold.
  const seen = new Set<boolean>();
  const until8s = Date.now() + 8000;
  while (Date.now() < until8s) {
    seen.add((await summary(id)).waitingForInput);
    await sleep(200);
  }
  expect([...seen]).toEqual([false]);
  await as('POST', `/v2/pty/sessions/${id}/input`, { input: 'q' });
  expect(await until(async () => (await summary(id)).shellState === 'prompt')).toBe(true);
});

test('a REPL at its prompt is waiting (a wait without a timeout), and stays so without flapping', async () => {
  if (!has('python3')) return expect.fail('python3 is needed for this test');
  const id = await open();
  await as('POST', `/v2/pty/sessions/${id}/exec`, { command: 'python3 -q', async: true });
  expect(await until(async () => (await summary(id)).waitingForInput, 15000)).toBe(true);
  expect((await summary(id)).prompt).toBe('>>>');
  const seen = new Set<boolean>();
  for (let i = 0; i < 15; i++) {
    seen.add((await summary(id)).waitingForInput);
    await sleep(200);
  }
  expect([...seen]).toEqual([true]);
  await as('POST', `/v2/pty/sessions/${id}/input`, { input: 'exit()', press_enter: true });
  expect(await until(async () => (await summary(id)).shellState === 'prompt')).toBe(true);
});
