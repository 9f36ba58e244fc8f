import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, until, type TestServer } from './helpers';

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
  expect(exec.structuredContent).toEqual({ status: 'completed', exit_code: 0, output: 'hi' });

  const py = await call(client, 'terminal_send', { session_id: id, text: 'python3 -q' });
  expect(py.structuredContent.wait_reason).toBe('stdin_read');
  const answer = await call(client, 'terminal_send', { session_id: id, text: 'print(2 ** 10)' });
  expect(answer.structuredContent).toMatchObject({ wait_reason: 'stdin_read', session_status: { kind: 'running' } });
  expect(answer.structuredContent.viewport).toContain('1024');
  await call(client, 'terminal_send', { session_id: id, text: 'exit()' });

  const read = await call(client, 'terminal_read', { session_id: id, count: 50 });
  expect(read.structuredContent.text).toContain('hi');

  const sig = await call(client, 'terminal_signal', { session_id: id, signal: 'SIGKILL' });
  expect(sig.isError).toBe(true);
  expect(sig.content[0].text).toMatch(/close the session instead/);

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

test('ptydeck mcp on stdio: the SDK client opens a terminal, runs echo hi and reads it; it shows under the agent name', async () => {
  const cli = join(__dirname, '..', 'out', 'main', 'cli.js');
  if (!existsSync(cli)) expect.fail(`the CLI is not built (${cli}); npm test builds it first`);
  const home = mkdtempSync(join(tmpdir(), 'ptydeck-mcp-'));
  const server = spawn(process.execPath, ['-e', `require(${JSON.stringify(cli)}).run(process.argv.slice(1))`, 'serve', '--port', '0'], { env: { ...process.env, PTYDECK_HOME: home, PTYDECK_TOKEN: '' }, stdio: 'ignore' });
  try {
    await until(() => existsSync(join(home, 'runtime.json')), 15000);
    const info = JSON.parse(readFileSync(join(home, 'runtime.json'), 'utf8'));
    const client = new Client({ name: 'stdio-agent', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['-e', `require(${JSON.stringify(cli)}).run(process.argv.slice(1))`, 'mcp', '--agent', 'claude'],
        env: { PATH: process.env.PATH ?? '', PTYDECK_HOME: home },
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
    const listing = await (await fetch(`${info.url}/api/sessions`, { headers: { Authorization: `Bearer ${info.token}` } })).json();
    expect(listing.sessions.find((s: { id: string }) => s.id === id).owner).toBe('claude');
    await client.close();
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(home, { recursive: true, force: true });
  }
});
