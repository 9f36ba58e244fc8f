import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, test, onTestFinished } from 'vitest';
import { startTestServer, type TestServer } from './helpers';
import { RUN_MARKER } from './leftovers';
import { cliPath, spawnServer } from './server-process';

/** MCP clients from the official SDK drive real terminals, over HTTP and over the stdio bridge. */
let srv: TestServer;
let token: string;
beforeAll(async () => {
  srv = await startTestServer();
  token = (await srv.api('POST', '/api/tokens', { name: 'codex' })).body.token;
});
afterAll(async () => {
  await srv.close();
});

type ToolResult = { structuredContent?: any; isError?: boolean; content: { type: string; text: string }[] };
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolResult;

test('over HTTP: open, exec echo hi, send to python3, read, signal, list, close', async () => {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  expect(tools).toEqual(['terminal_close', 'terminal_exec', 'terminal_list', 'terminal_open', 'terminal_read', 'terminal_rename', 'terminal_send', 'terminal_signal']);
  const send = (await client.listTools()).tools.find((t) => t.name === 'terminal_send')!;
  for (const reason of ['stdin_read', 'inferred_idle', 'timeout', 'session_exit']) expect(send.description).toContain(reason);

  const opened = await call(client, 'terminal_open', { cwd: '/tmp' });
  expect(opened.isError).toBeFalsy();
  const id = opened.structuredContent.session_id as string;
  expect(opened.structuredContent.screen).toMatch(/[$#] $/);

  const exec = await call(client, 'terminal_exec', { session_id: id, command: 'echo hi' });
  expect(exec.structuredContent).toEqual({ status: 'completed', exit_code: 0, output: 'hi', truncated: false });

  // A slow interpreter start (a loaded machine, a pyenv shim) must not read as inferred_idle.
  const py = await call(client, 'terminal_send', { session_id: id, text: 'python3 -q', idle_ms: 60_000 });
  expect(py.structuredContent.wait_reason).toBe('stdin_read');
  const answer = await call(client, 'terminal_send', { session_id: id, text: 'print(2 ** 10)' });
  expect(answer.structuredContent).toMatchObject({ wait_reason: 'stdin_read', at_shell_prompt: false, session_status: { kind: 'shell_alive' } });
  expect(answer.structuredContent.viewport).toContain('1024');
  await call(client, 'terminal_send', { session_id: id, text: 'exit()' });

  const read = await call(client, 'terminal_read', { session_id: id, count: 50 });
  expect(read.structuredContent.text).toContain('hi');

  const sig = await call(client, 'terminal_signal', { session_id: id, signal: 'SIGKILL' });
  expect(sig.structuredContent).toMatchObject({ delivered: false, target_pgid: null });

  const list = await call(client, 'terminal_list');
  expect(list.structuredContent.sessions.map((s: { id: string; owner: string }) => [s.id, s.owner])).toEqual([[id, 'codex']]);
  // The person sees it in the viewer's listing under the agent's name.
  expect((await srv.api('GET', `/api/sessions/${id}`)).body).toMatchObject({ owner: 'codex', origin: 'mcp' });

  const closed = await call(client, 'terminal_close', { session_id: id });
  expect(closed.structuredContent).toMatchObject({ closed: true, survivors: [] });
  const gone = await call(client, 'terminal_exec', { session_id: id, command: 'true' });
  expect(gone.isError).toBe(true);
  expect(gone.content[0].text).toMatch(/not found/);
  await client.close();
});

test('results a model reads right: an idle prompt answered at once, no signal to the shell, truncation said, compact JSON', async () => {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const tools = (await client.listTools()).tools;
  expect(tools.find((t) => t.name === 'terminal_signal')!.description).toContain('The shell itself is never signalled');
  const id = (await call(client, 'terminal_open', { cwd: '/tmp' })).structuredContent.session_id as string;

  // "" at the prompt: at once (a wait for the timeout would outlast the test's own limit), and it says why.
  const watched = await call(client, 'terminal_send', { session_id: id, text: '', timeout_ms: 600_000 });
  expect(watched.structuredContent).toMatchObject({ wait_reason: 'stdin_read', at_shell_prompt: true, session_status: { kind: 'shell_alive' } });

  const shellPid = srv.app.manager.get(id)!.pid!;
  const sig = await call(client, 'terminal_signal', { session_id: id, signal: 'SIGTERM' });
  expect(sig.isError).toBeFalsy();
  expect(sig.structuredContent).toEqual({ delivered: false, target_pgid: null, reason: expect.stringContaining('no program is running: the shell waits at its prompt') });
  expect(srv.app.manager.get(id)!.pid).toBe(shellPid);

  const big = await call(client, 'terminal_exec', { session_id: id, command: 'seq 1 20000' });
  expect(big.structuredContent).toMatchObject({ status: 'completed', exit_code: 0, truncated: true });
  expect(big.structuredContent.output).toMatch(/^1\n2\n[\s\S]*Observation truncated[\s\S]*\n20000$/);
  const small = await call(client, 'terminal_exec', { session_id: id, command: 'echo small' });
  expect(small.structuredContent).toEqual({ status: 'completed', exit_code: 0, output: 'small', truncated: false });

  // One compact copy of the object in the text, the same as structuredContent.
  for (const r of [watched, sig, big, small]) expect(r.content).toEqual([{ type: 'text', text: JSON.stringify(r.structuredContent) }]);
  await call(client, 'terminal_close', { session_id: id });
  await client.close();
});

test('a bad argument is a tool error that names the field, not a crash', async () => {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const r = await call(client, 'terminal_open', { cols: -3 });
  expect(r.isError).toBe(true);
  expect(JSON.stringify(r.content)).toMatch(/cols/);
  await client.close();
});

test('/mcp needs a credential', async () => {
  const r = await fetch(`${srv.url}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: '{}' });
  expect(r.status).toBe(401);
});

test('ptydeck mcp on stdio with a refused token says the server refused it, not that it did not answer', async () => {
  const client = new Client({ name: 'stdio-agent', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['-e', `require(${JSON.stringify(cliPath)}).run(process.argv.slice(1))`, 'mcp'],
    env: { PATH: process.env.PATH ?? '', PTYDECK_URL: srv.url, PTYDECK_AGENT_TOKEN: 'pdk_revoked_or_wrong', [RUN_MARKER]: process.env[RUN_MARKER] ?? '' },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += d));
  const err = await client.connect(transport).then(
    () => null,
    (e: Error) => e,
  );
  await client.close();
  expect(err?.message).toContain(`the ptydeck server at ${srv.url} refused the credential (HTTP 401: Invalid credential: the token is unknown or was revoked)`);
  expect(err?.message).not.toContain('did not answer');
  expect(stderr).toContain('refused the credential (HTTP 401');
}, 90_000);

test('ptydeck mcp on stdio: the SDK client opens a terminal, runs echo hi and reads it; it shows under the agent name', async () => {
  const server = await spawnServer(mkdtempSync(join(tmpdir(), 'ptydeck-mcp-')));
  // Also when the test fails or times out: nothing it started may outlive it.
  onTestFinished(() => server.close());
  const client = new Client({ name: 'stdio-agent', version: '1.0.0' });
  onTestFinished(() => client.close());
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['-e', `require(${JSON.stringify(cliPath)}).run(process.argv.slice(1))`, 'mcp', '--agent', 'claude'],
      // A minimal environment, plus the run's marker so that a bridge left running would be found.
      env: { PATH: process.env.PATH ?? '', PTYDECK_HOME: server.home, [RUN_MARKER]: process.env[RUN_MARKER] ?? '' },
      stderr: 'pipe',
    }),
  );
  const opened = await call(client, 'terminal_open', { cwd: '/tmp' });
  const id = opened.structuredContent.session_id;
  const sent = await call(client, 'terminal_send', { session_id: id, text: 'echo hi' });
  expect(sent.structuredContent.wait_reason).toBe('stdin_read');
  expect(sent.structuredContent.viewport).toMatch(/^.*echo hi\nhi\n/);
  const read = await call(client, 'terminal_read', { session_id: id });
  expect(read.structuredContent.text.split('\n')).toContain('hi');
  const listing = await (await fetch(`${server.url}/api/sessions`, { headers: { Authorization: `Bearer ${server.token}` } })).json();
  expect(listing.sessions.find((s: { id: string }) => s.id === id).owner).toBe('claude');
  await client.close();
}, 90_000);
