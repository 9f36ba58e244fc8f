import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from './helpers';

/**
 * A person's own terminal reads their ~/.bashrc, which may be slow (pyenv's rehash waits a minute on a
 * stale lock) or broken. Like any terminal emulator, ptydeck opens it while the rc still runs; only a
 * shell that is gone fails the creation.
 */
let srv: TestServer;
beforeAll(async () => (srv = await startTestServer()));
afterAll(async () => srv?.close());

function homeWithRc(rc: string): string {
  const home = mkdtempSync(join(srv.home, 'person-'));
  writeFileSync(join(home, '.bashrc'), rc);
  return home;
}

test('a person terminal whose ~/.bashrc is still running opens anyway, and is live', async () => {
  const r = await srv.api('POST', '/api/sessions', { env: { HOME: homeWithRc('sleep 60\n') } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  // Answered while the rc still runs: no prompt yet, the shell alive and the person's.
  expect(r.body.session).toMatchObject({ owner: 'admin', shellState: 'starting', exitCode: null });
  const list = await srv.api('GET', '/api/sessions');
  expect(list.body.sessions.map((s: { id: string }) => s.id)).toContain(r.body.session.id);
  await srv.api('DELETE', `/api/sessions/${r.body.session.id}`);
});

test('a person terminal whose ~/.bashrc ends the shell fails with the reason', async () => {
  const r = await srv.api('POST', '/api/sessions', { env: { HOME: homeWithRc('exit 3\n') } });
  expect(r.status).toBe(400);
  expect(r.body.error.message).toMatch(/could not start the shell: the shell exited/);
});
