import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { childNamed, startTestServer, until, type TestServer } from './helpers';

/**
 * Session titles: set at creation on every door that creates, changed later by the owner or the person,
 * validated; without one, the program's window title (OSC 0/2), then the running command.
 */
let srv: TestServer;
let claude: string;
let codex: string;
beforeAll(async () => {
  srv = await startTestServer();
  claude = (await srv.api('POST', '/api/tokens', { name: 'claude' })).body.token;
  codex = (await srv.api('POST', '/api/tokens', { name: 'codex' })).body.token;
});
afterAll(async () => {
  await srv.close();
});

const as = (token: string) => (method: string, path: string, body?: unknown) => srv.api(method, path, body, { token });
const summary = async (id: string) => (await srv.api('GET', `/api/sessions/${id}`)).body;

test('set at creation: native, AIO v2 (an extension field) and MCP terminal_open; every listing carries it', async () => {
  const native = await as(claude)('POST', '/api/sessions', { cwd: '/tmp', title: 'claude: deploy staging' });
  expect(native.body.session).toMatchObject({ title: 'claude: deploy staging', titleSource: 'set' });
  const v2 = await as(claude)('POST', '/v2/pty/sessions', { cwd: '/tmp', title: '  refactor session module, part 3  ' });
  const v2id = v2.body.data.session_id;
  expect(v2.body.data.title).toBe('refactor session module, part 3');
  expect((await as(claude)('GET', '/v2/pty/sessions')).body.data.sessions[v2id].title).toBe('refactor session module, part 3');
  expect((await srv.api('GET', '/api/sessions')).body.sessions.find((s: { id: string }) => s.id === v2id).title).toBe('refactor session module, part 3');

  const client = new Client({ name: 'title-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${codex}` } } }));
  const opened = (await client.callTool({ name: 'terminal_open', arguments: { cwd: '/tmp', title: 'codex: lint' } })) as unknown as { structuredContent: { session_id: string } };
  expect(await summary(opened.structuredContent.session_id)).toMatchObject({ title: 'codex: lint', owner: 'codex' });
  const renamed = (await client.callTool({ name: 'terminal_rename', arguments: { session_id: opened.structuredContent.session_id, title: 'codex: lint, round 2' } })) as { isError?: boolean };
  expect(renamed.isError).toBeFalsy();
  expect((await summary(opened.structuredContent.session_id)).title).toBe('codex: lint, round 2');
  await client.close();
});

test('PATCH /api/sessions/{id}: the owning agent and the person may rename; another agent gets 404; bad titles are refused', async () => {
  const id = (await as(claude)('POST', '/api/sessions', { cwd: '/tmp' })).body.session.id;
  expect((await as(claude)('PATCH', `/api/sessions/${id}`, { title: 'mine' })).body.title).toBe('mine');
  expect((await srv.api('PATCH', `/api/sessions/${id}`, { title: 'the person’s name for it' })).body).toMatchObject({ title: 'the person’s name for it', titleSource: 'set' });
  expect((await as(codex)('PATCH', `/api/sessions/${id}`, { title: 'stolen' })).status).toBe(404);
  for (const bad of ['two\nlines', 'esc\x1b]0;x\x07', 'tab\there', 'x'.repeat(121), 'c1\u0085']) {
    const res = await as(claude)('PATCH', `/api/sessions/${id}`, { title: bad });
    expect(res.status, JSON.stringify(bad)).toBe(400);
    expect(res.body.error.message).toMatch(/title/);
  }
  expect((await as(claude)('PATCH', `/api/sessions/${id}`, { title: 7 })).status).toBe(400);
  expect((await as(claude)('PATCH', `/api/sessions/${id}`, {})).status).toBe(400);
  expect((await as(claude)('POST', '/v2/pty/sessions', { title: 'bad\u0007' })).status).toBe(422);
  expect((await summary(id)).title).toBe('the person’s name for it');
  // '' (or null) clears it.
  expect((await srv.api('PATCH', `/api/sessions/${id}`, { title: '' })).body).toMatchObject({ title: null, titleSource: null });
});

test('without a title: the program’s window title (cleaned), then the running command; a command’s title ends with it', async () => {
  const id = (await as(claude)('POST', '/api/sessions', { cwd: '/tmp' })).body.session.id;
  // A program sets its title and keeps running: the tab shows the program's name for itself.
  await as(claude)('POST', `/api/sessions/${id}/send`, { text: "printf '\\033]0;vim: notes.md\\a'; sleep 30", timeout_ms: 1500, idle_ms: 500 });
  expect(await until(async () => (await summary(id)).titleSource === 'window')).toBe(true);
  expect((await summary(id)).title).toBe('vim: notes.md');
  // Its command ends: the title went with it.
  await srv.api('POST', `/api/sessions/${id}/interrupt`);
  expect(await until(async () => (await summary(id)).shellState === 'prompt')).toBe(true);
  expect(await until(async () => (await summary(id)).title === null)).toBe(true);
  // A running command names the tab while it runs.
  await as(claude)('POST', `/v2/pty/sessions/${id}/exec`, { command: 'sleep 30', async: true });
  expect(await until(async () => (await summary(id)).titleSource === 'command')).toBe(true);
  expect((await summary(id)).title).toBe('sleep 30');
  // ^C typed before bash has read the line would discard the line, not stop sleep: interrupt once it runs.
  expect(await until(() => childNamed(srv.app.manager.get(id)!.pid!, 'sleep'))).toBe(true);
  await srv.api('POST', `/api/sessions/${id}/interrupt`);
  expect(await until(async () => (await summary(id)).shellState === 'prompt')).toBe(true);
  // Control characters inside a window title never reach a listing; a set title wins over it.
  await as(claude)('POST', `/v2/pty/sessions/${id}/exec`, { command: "printf '\\033]2;a\\tb\\302\\205c\\033\\\\'", async: false });
  await as(claude)('POST', `/api/sessions/${id}/send`, { text: "printf '\\033]2;with\\ttab\\033\\\\'; sleep 30", timeout_ms: 1500, idle_ms: 500 });
  expect(await until(async () => (await summary(id)).title === 'with tab')).toBe(true);
  await as(claude)('PATCH', `/api/sessions/${id}`, { title: 'named' });
  expect(await summary(id)).toMatchObject({ title: 'named', titleSource: 'set' });
  await srv.api('POST', `/api/sessions/${id}/interrupt`);
});
