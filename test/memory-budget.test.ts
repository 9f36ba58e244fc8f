import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * One memory budget for every session's log and screen: over it, unwatched screens are dropped and
 * cold log segments go to disk, and every door still gets every byte (read back from disk).
 */
const MiB = 1024 * 1024;
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ PTYDECK_MEMORY_BUDGET_BYTES: String(3 * MiB), PTYDECK_LOG_BYTES: String(8 * MiB) });
});
afterAll(async () => {
  await srv.close();
});

test('sessions that printed more than the budget hold about the budget; replay and the screen still work', async () => {
  const ids: string[] = [];
  for (const n of [1, 2, 3]) {
    const id = (await srv.api('POST', '/v2/pty/sessions', { id: `mem-${n}`, cwd: '/tmp' })).body.data.session_id;
    ids.push(id);
    // 2.6 MiB of numbered lines, then a marker.
    const r = await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `seq 1 200000 | sed 's/^/line-${n}-/'; echo done-$((${n}+0))`, timeout: 60 });
    expect(r.body.data.status).toBe('completed');
    // Someone looked at the screen (it exists now, and nobody watches it).
    expect((await srv.api('GET', `/v2/pty/sessions/${id}/screen`)).status).toBe(200);
  }
  const manager = srv.app.manager;
  const logBytes = () => manager.list().reduce((n, s) => n + s.log.retainedBytes, 0);
  expect(logBytes()).toBeGreaterThan(3 * 2 * MiB);
  const { heldBytes } = manager.memory.enforce();
  expect(heldBytes).toBeLessThanOrEqual(3 * MiB);
  expect(manager.list().every((s) => s.screenBytes === 0)).toBe(true);

  // execd replays everything the log holds, spilled or not, byte for byte.
  const c = await WsClient.open(`${srv.wsUrl}/pty/${ids[0]}/ws?since=0`, { 'X-EXECD-ACCESS-TOKEN': srv.token });
  const replay = await c.next((f) => Boolean(f.binary && f.binary[0] === 0x03));
  const text = replay.binary!.subarray(9).toString('latin1');
  // (The first line follows the shell's invisible command-start marker: match lines, not rows.)
  const lines = [...text.matchAll(/line-1-\d+(?=\r\n)/g)].map((m) => m[0]);
  expect(lines.length).toBe(200000);
  expect(lines[0]).toBe('line-1-1');
  expect(lines[199999]).toBe('line-1-200000');
  c.close();

  // The dropped screen is rebuilt on demand from the log's tail.
  const screen = await srv.api('GET', `/v2/pty/sessions/${ids[2]}/screen`);
  expect(screen.body.data.output).toContain('done-3');
}, 120_000);
