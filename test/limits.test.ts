import { afterEach, expect, test } from 'vitest';
import { startTestServer, sleep, until, type TestServer } from './helpers';

let srv: TestServer | null = null;
afterEach(async () => {
  await srv?.close();
  srv = null;
});

const create = async (s: TestServer, id: string) => (await s.api('POST', '/v2/pty/sessions', { id, cwd: '/tmp' }));
const ids = async (s: TestServer): Promise<string[]> => Object.keys((await s.api('GET', '/v2/pty/sessions')).body.data.sessions).sort();

test('at the limit the least recently used idle session is reclaimed; with none reclaimable creation answers 400', async () => {
  srv = await startTestServer({ AIO_SHELL_MAX_SESSIONS: '3' });
  for (const id of ['s1', 's2', 's3']) expect((await create(srv, id)).status).toBe(200);
  await sleep(20);
  // Use s1 and s3 again: s2 is now the least recently used.
  await srv.api('POST', '/v2/pty/sessions/s1/exec', { command: 'true' });
  await srv.api('POST', '/v2/pty/sessions/s3/exec', { command: 'true' });
  expect((await create(srv, 's4')).status).toBe(200);
  expect(await ids(srv)).toEqual(['s1', 's3', 's4']);
  // Busy sessions (a running command) cannot be reclaimed.
  for (const id of ['s1', 's3', 's4']) await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'sleep 5', async: true });
  const refused = await create(srv, 's5');
  expect(refused.status).toBe(400);
  expect(refused.body.message).toMatch(/limit of 3 sessions.*none can be reclaimed/);
  expect(await ids(srv)).toEqual(['s1', 's3', 's4']);
  const stats = (await srv.api('GET', '/v1/shell/sessions/stats')).body.data;
  expect(stats.max_sessions).toBe(3);
  expect(stats.usage_ratio).toBe(1);
});

test('idle sessions close after AIO_SHELL_SESSION_TIMEOUT_SECS; a running command keeps one open', async () => {
  srv = await startTestServer({ AIO_SHELL_SESSION_TIMEOUT_SECS: '1' });
  await create(srv, 'idle');
  await create(srv, 'busy');
  await srv.api('POST', '/v2/pty/sessions/busy/exec', { command: 'sleep 4', async: true });
  const gone = await until(async () => !(await ids(srv!)).includes('idle'), 6000, 200);
  expect(gone).toBe(true);
  expect(await ids(srv)).toContain('busy');
});

test('a plain sh (dash) works too: exec, exit codes, multi-line and prompts', async () => {
  srv = await startTestServer({ PTYDECK_SHELL: '/bin/sh' });
  const sid = (await create(srv, 'dash')).body.data.session_id;
  const exec = (body: object) => srv!.api('POST', `/v2/pty/sessions/${sid}/exec`, body);
  const r = await exec({ command: 'printf shell-doc-ok' });
  expect(r.body.data).toMatchObject({ status: 'completed', output: 'shell-doc-ok', exit_code: 0 });
  expect((await exec({ command: 'false' })).body.data.exit_code).toBe(1);
  expect((await exec({ command: 'echo one\necho two\n(exit 5)' })).body.data).toMatchObject({ output: 'one\ntwo', exit_code: 5 });
  await exec({ command: 'cd /usr; export K=v' });
  expect((await exec({ command: 'pwd; echo $K' })).body.data.output).toBe('/usr\nv');
  await exec({ command: 'printf "Name: "; read name; echo Hello $name', async: true });
  await sleep(300);
  expect((await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data.output).toBe('Name: ');
  await srv.api('POST', `/v2/pty/sessions/${sid}/input`, { input: 'Alice', press_enter: true });
  await srv.api('POST', `/v2/pty/sessions/${sid}/wait`, { seconds: 5 });
  expect((await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data).toMatchObject({ output: 'Name: Alice\nHello Alice', exit_code: 0 });
});
