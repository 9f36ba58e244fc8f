import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { readStat } from '../src/main/terminal/processes';
import { startTestServer, until, type TestServer } from './helpers';

/**
 * One agent cannot starve or evict the others: each has its own quota under the global limit, only its
 * own idle sessions are reclaimed for it, room is kept for the person, and nothing tells it about ids
 * or sessions it may not see.
 */
let srv: TestServer;
let dir: string;
const tokens: Record<string, string> = {};
beforeAll(async () => {
  // 6 sessions in all; 3 per agent; the person keeps 1 that no agent can take.
  srv = await startTestServer({ AIO_SHELL_MAX_SESSIONS: '6', PTYDECK_MAX_SESSIONS_PER_AGENT: '3' });
  for (const name of ['alice', 'bob', 'carol']) tokens[name] = (await srv.api('POST', '/api/tokens', { name })).body.token;
  dir = mkdtempSync(join(tmpdir(), 'ptydeck-quota-'));
});
afterAll(async () => {
  await srv.close();
  rmSync(dir, { recursive: true, force: true });
});

const as = (who: string) => (method: string, path: string, body?: unknown) => srv.api(method, path, body, { token: tokens[who] });
const create = (who: string, id: string) => as(who)('POST', '/v2/pty/sessions', { id, cwd: '/tmp' });
const mine = async (who: string): Promise<string[]> => Object.keys((await as(who)('GET', '/v2/pty/sessions')).body.data.sessions).sort();

test('one agent filling its quota reclaims only its own idle sessions; another agent and its background job are untouched', async () => {
  expect((await create('alice', 'a1')).status).toBe(200);
  const f = join(dir, 'job.pid');
  await as('alice')('POST', '/v2/pty/sessions/a1/exec', { command: `sh -c 'echo $$ > ${f}; exec sleep 1000' &` });
  await until(() => existsSync(f) && readFileSync(f, 'utf8').trim() !== '', 5000);
  const job = Number(readFileSync(f, 'utf8'));
  for (const id of ['b1', 'b2', 'b3', 'b4', 'b5', 'b6']) expect([id, (await create('bob', id)).status]).toEqual([id, 200]);
  // bob's own least recently used sessions made room for his 4th to 6th.
  expect(await mine('bob')).toEqual(['b4', 'b5', 'b6']);
  expect(await mine('alice')).toEqual(['a1']);
  const st = readStat(job);
  expect(st !== null && st.state !== 'Z', 'alice\'s background job was killed').toBe(true);
});

test('an agent whose sessions are all busy is refused at its quota, naming it', async () => {
  for (const id of ['b4', 'b5', 'b6']) await as('bob')('POST', `/v2/pty/sessions/${id}/exec`, { command: 'sleep 60', async: true });
  const r = await create('bob', 'b7');
  expect(r.status).toBe(400);
  expect(r.body.message).toMatch(/bob.*quota of 3 sessions/);
  expect(await mine('bob')).toEqual(['b4', 'b5', 'b6']);
});

test('when agents have used their share, the person still gets a terminal', async () => {
  // alice 1 + bob 3 = 4 of the 5 sessions agents may hold together; carol takes the 5th.
  expect((await create('carol', 'c1')).status).toBe(200);
  await as('carol')('POST', '/v2/pty/sessions/c1/exec', { command: 'sleep 60', async: true });
  const full = await create('carol', 'c2');
  expect(full.status).toBe(400);
  expect(full.body.message).toMatch(/no room/i);
  expect(JSON.stringify(full.body)).not.toMatch(/alice|bob|\b[45] sessions/);
  const person = await srv.api('POST', '/v2/pty/sessions', { id: 'p1', cwd: '/tmp' });
  expect(person.status, JSON.stringify(person.body)).toBe(200);
});

test("an id another agent holds answers as any unavailable id, without saying it exists; lookups are 404 as for a missing one", async () => {
  const taken = await create('carol', 'a1');
  expect(taken.status).toBe(400);
  expect(taken.body.message).toBe('Session id a1 is not available; choose another id, or omit id for a generated one');
  expect(JSON.stringify(taken.body)).not.toMatch(/alice|in use|another principal|exists/);
  const missing = await as('carol')('GET', '/v2/pty/sessions/a1');
  const never = await as('carol')('GET', '/v2/pty/sessions/never-was');
  expect([missing.status, missing.body.message]).toEqual([never.status, never.body.message]);
});

test('stats report only what the caller may see', async () => {
  const bob = (await as('bob')('GET', '/v1/shell/sessions/stats')).body.data;
  expect(bob).toMatchObject({ total_sessions: 3, max_sessions: 3, usage_ratio: 1 });
  const v2 = (await as('alice')('GET', '/v2/pty/sessions')).body.data.stats;
  expect(v2).toMatchObject({ total_sessions: 1, max_sessions: 3 });
  expect(v2.usage_ratio).toBeCloseTo(1 / 3, 3);
  const person = (await srv.api('GET', '/v1/shell/sessions/stats')).body.data;
  expect(person).toMatchObject({ total_sessions: 6, max_sessions: 6, usage_ratio: 1 });
});
