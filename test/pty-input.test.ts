import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { startTestServer, sleep, until, type TestServer } from './helpers';

/**
 * What goes into a PTY is bounded like what comes out of it.
 *
 * A program that floods the terminal with queries (`yes $'\e[6n'`: "where is the cursor?", forever, never
 * reading the answers) must not make the server buffer answers without bound, nor wedge the session.
 */
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  await srv.close();
});

const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const live = (): number => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external + m.arrayBuffers;
};

/**
 * Memory budgets, measured on this whole process (the test and the server in it), garbage included. A
 * bounded server holds at most a few KiB of pending answers per session plus its 10 MiB log and the
 * headless screen's parse buffers (peaks of 60-75 MiB seen, mostly garbage not yet collected); the
 * unbounded one grew by ~600 MiB within the 12 s of this flood. 192 MiB is far from both.
 */
const GROWTH_BOUND = 192 * 1024 * 1024;
/** After the session closes, what it held must be given back (a few MiB of noise allowed). */
const RETAINED_BOUND = 16 * 1024 * 1024;

test('a flood of cursor-position queries stays bounded, the session answers afterwards, and closing gives the memory back', async () => {
  const baseline = live();
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  const flood = await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: "timeout 12 yes $'\\e[6n'", async: true });
  expect(flood.status).toBe(200);
  let peak = 0;
  // Sample until the flood has ended (the command completes when `timeout` kills yes).
  const ended = await until(async () => {
    peak = Math.max(peak, process.memoryUsage().heapUsed + process.memoryUsage().external + process.memoryUsage().arrayBuffers - baseline);
    const screen = await srv.api('GET', `/v2/pty/sessions/${sid}/screen`, undefined);
    return screen.body.data?.status === 'completed';
  }, 120_000, 250);
  console.log(`query flood: peak growth ${(peak / 2 ** 20).toFixed(0)} MiB`);
  expect(ended, 'the flood command never completed').toBe(true);
  expect(peak).toBeLessThan(GROWTH_BOUND);
  // The session is not wedged: a command runs and answers.
  const after = await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'echo after-flood', timeout: 60 });
  expect(after.body.data).toMatchObject({ status: 'completed', output: 'after-flood' });
  await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
  // The PTY's reader is let go once it has been quiet for a moment (node-pty-backend.ts): then measure.
  await sleep(1000);
  gc();
  const retained = live() - baseline;
  console.log(`query flood: retained after close ${(retained / 2 ** 20).toFixed(1)} MiB`);
  expect(retained).toBeLessThan(RETAINED_BOUND);
}, 240_000);

test('input still in flight when a session closes is dropped quietly (no "Unhandled pty write error" on stderr)', async () => {
  const errors: string[] = [];
  const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    errors.push(args.map(String).join(' '));
  });
  try {
    for (let i = 0; i < 3; i++) {
      const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
      // sleep does not read: the terminal's input buffer fills and the rest waits in the server.
      await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'sleep 30', async: true });
      for (let j = 0; j < 4; j++) await srv.api('POST', `/v2/pty/sessions/${sid}/input`, { input: 'x'.repeat(512 * 1024) });
      await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
    }
    await sleep(500);
  } finally {
    spy.mockRestore();
  }
  expect(errors.filter((e) => /pty write error/.test(e))).toEqual([]);
});

test('input for a program that does not read is refused once 4 MiB wait, with a clear 429; the session still closes', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  // Raw and without echo, the terminal takes no input itself: in its usual mode it would (it echoes a
  // line too long to keep and discards the rest, a few MiB a second), and what waits would depend on
  // how fast this test writes.
  await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'stty raw -echo; sleep 60', async: true });
  // Until the command runs, the shell itself reads what is typed (into its line editor).
  expect(await until(async () => (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`, undefined)).body.data?.status === 'running', 20_000)).toBe(true);
  const statuses: number[] = [];
  let refusal: any = null;
  for (let i = 0; i < 8; i++) {
    const r = await srv.api('POST', `/v2/pty/sessions/${sid}/input`, { input: 'y'.repeat(1024 * 1024 - 16) });
    statuses.push(r.status);
    if (r.status !== 200) refusal ??= r.body;
  }
  expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
  expect(statuses.slice(5)).toEqual([429, 429, 429]);
  expect(refusal.message).toMatch(/not taking input: \d+ bytes already wait/);
  const closed = await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
  expect(closed.body.data.survivors).toEqual([]);
});

test('a program that prints megabytes and then asks where the cursor is gets its answer, in a session nobody watches', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  // ~6.9 MB the headless screen never parsed (nobody looks at this session): the query after them makes
  // it rebuild from the tail, and the answer must still come.
  const cmd = `seq 1 1000000; stty -echo; printf '\\033[6n'; IFS= read -rs -d R -t 10 a; stty echo; echo "answer:\${a#*[}"`;
  const r = await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: cmd, timeout: 60 });
  expect(r.body.data?.status).toBe('completed');
  expect(String(r.body.data?.output)).toMatch(/answer:\d+;\d+$/);
  await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
}, 90_000);
