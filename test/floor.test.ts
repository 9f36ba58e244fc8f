import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * The floor, on every door: while the person holds a session, every agent action that changes the
 * terminal is refused with 423 and one message, and nothing changes; reads still work. The person's own
 * credential is never refused, whatever the floor.
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

const HELD = /^A person has taken control of this session/;
const asAgent = (method: string, path: string, body?: unknown) => srv.api(method, path, body, { token: claude });
const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });

/** An agent's session, taken over by the person, with a marker command run first. */
async function heldSession(): Promise<string> {
  const id = (await asAgent('POST', '/v2/pty/sessions', { cwd: '/tmp', cols: 80, rows: 24 })).body.data.session_id as string;
  expect((await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo before-$((2*3))' })).body.data.output).toBe('before-6');
  expect((await srv.api('POST', `/api/sessions/${id}/takeover`)).body.floor).toBe('takeover');
  return id;
}

async function expectUntouched(id: string): Promise<void> {
  const s = await srv.api('GET', `/api/sessions/${id}`);
  expect(s.status).toBe(200);
  expect(s.body).toMatchObject({ cols: 80, rows: 24, shellState: 'prompt', floor: 'takeover' });
  // The shell still answers the person, and nothing the agent sent reached it.
  const person = await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo alive-$((40+2))' });
  expect(person.body.data.output).toBe('alive-42');
  expect(srv.app.manager.get(id)?.isAlive).toBe(true);
}

describe('while the person holds the floor, agents are refused on every door', () => {
  test('REST: AIO v2 input, exec, resize, signal, delete; v1 exec, write, kill, delete; execd delete; native send, exec, signal, close', async () => {
    const id = await heldSession();
    const attempts: [string, string, unknown?][] = [
      ['POST', `/v2/pty/sessions/${id}/input`, { input: 'touch /tmp/never-v2\r' }],
      ['POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo nope' }],
      ['PATCH', `/v2/pty/sessions/${id}`, { cols: 40, rows: 10 }],
      ['POST', `/v2/pty/sessions/${id}/signal`, { signal: 'SIGKILL' }],
      ['DELETE', `/v2/pty/sessions/${id}`],
      ['POST', '/v1/shell/exec', { id, command: 'echo nope' }],
      ['POST', '/v1/shell/write', { id, input: 'echo nope', press_enter: true }],
      ['POST', '/v1/shell/kill', { id }],
      ['DELETE', `/v1/shell/sessions/${id}`],
      ['DELETE', '/v1/shell/sessions'],
      ['DELETE', `/pty/${id}`],
      ['POST', `/api/sessions/${id}/send`, { text: 'echo nope' }],
      ['POST', `/api/sessions/${id}/exec`, { command: 'echo nope' }],
      ['POST', `/api/sessions/${id}/signal`, { signal: 'SIGINT' }],
      ['DELETE', `/api/sessions/${id}`],
    ];
    for (const [method, path, body] of attempts) {
      const res = await asAgent(method, path, body);
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(423);
      const message = res.body.message ?? res.body.error?.message;
      expect(message, `${method} ${path}`).toMatch(HELD);
    }
    await expectUntouched(id);
    // Reads still work.
    expect((await asAgent('GET', `/v2/pty/sessions/${id}/screen`)).status).toBe(200);
    expect((await asAgent('GET', `/api/sessions/${id}/read`)).status).toBe(200);
    expect((await asAgent('GET', `/pty/${id}`)).status).toBe(200);
    // Every refusal is counted on the session, by agent and action, for the viewer.
    const summary = (await srv.api('GET', `/api/sessions/${id}`)).body;
    expect(summary.refusals).toBe(attempts.length);
    expect(summary.refusedBy).toHaveLength(1);
    expect(summary.refusedBy[0]).toMatchObject({ agent: 'claude', count: attempts.length });
    expect([...summary.refusedBy[0].actions].sort()).toEqual(['close', 'exec', 'input', 'resize', 'send', 'signal']);
  });

  test('WebSockets: AIO input and resize, execd stdin, resize and signal get an error frame and change nothing', async () => {
    const id = await heldSession();
    const aio = await WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${id}/ws`, bearer(claude));
    await aio.nextJson('ready');
    aio.sendJson({ type: 'input', data: 'touch /tmp/never-ws\r' });
    expect((await aio.nextJson('error')).data).toMatch(HELD);
    aio.sendJson({ type: 'resize', cols: 33, rows: 11 });
    expect((await aio.nextJson('error')).data).toMatch(HELD);
    aio.close();

    const execd = await WsClient.open(`${srv.wsUrl}/pty/${id}/ws`, bearer(claude));
    await execd.nextJson('connected');
    execd.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('echo nope\r')]));
    expect((await execd.nextJson('error')).code).toBe('FLOOR_HELD');
    execd.sendJson({ type: 'signal', signal: 'SIGKILL' });
    expect((await execd.nextJson('error')).error).toMatch(HELD);
    execd.sendJson({ type: 'resize', cols: 33, rows: 11 });
    expect((await execd.nextJson('error')).error).toMatch(HELD);
    execd.close();
    await expectUntouched(id);
  });

  test('MCP: exec, send, signal and close come back as tool errors that say a person has control', async () => {
    const id = await heldSession();
    const client = new Client({ name: 'floor-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: bearer(claude) } }));
    const calls: [string, Record<string, unknown>][] = [
      ['terminal_exec', { session_id: id, command: 'echo nope' }],
      ['terminal_send', { session_id: id, text: 'echo nope' }],
      ['terminal_signal', { session_id: id, signal: 'SIGINT' }],
      ['terminal_close', { session_id: id }],
    ];
    for (const [name, args] of calls) {
      const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: { text: string }[] };
      expect(r.isError, name).toBe(true);
      expect(r.content[0].text, name).toMatch(/A person has taken control/);
    }
    await client.close();
    await expectUntouched(id);
  });

  test('after release the agent acts again, and the next takeover counts refusals from zero', async () => {
    const id = await heldSession();
    expect((await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: 'x' })).status).toBe(423);
    expect((await srv.api('POST', `/api/sessions/${id}/release`)).body).toMatchObject({ floor: 'watch', refusals: 1 });
    expect((await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo back' })).body.data.output).toBe('back');
    expect((await srv.api('POST', `/api/sessions/${id}/takeover`)).body).toMatchObject({ floor: 'takeover', refusals: 0, refusedBy: [] });
  });

  test('a session the person holds is not reclaimed for an agent that needs room', async () => {
    const id = await heldSession();
    expect(srv.app.manager.isReclaimable(srv.app.manager.get(id)!)).toBe(false);
    await srv.api('POST', `/api/sessions/${id}/release`);
    expect(srv.app.manager.isReclaimable(srv.app.manager.get(id)!)).toBe(true);
  });
});

describe("the person's own credential is the person on every door", () => {
  test('it is never refused by the floor: send in watch mode, exec and input while taken over', async () => {
    const id = (await asAgent('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id as string;
    const send = await srv.api('POST', `/api/sessions/${id}/send`, { text: 'echo person-sends-$((1+1))' });
    expect(send.status, JSON.stringify(send.body)).toBe(200);
    expect(send.body).toMatchObject({ wait_reason: 'stdin_read' });
    expect(send.body.viewport).toContain('person-sends-2');
    await srv.api('POST', `/api/sessions/${id}/takeover`);
    expect((await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo person-execs' })).body.data.output).toBe('person-execs');
    expect((await srv.api('POST', `/v1/shell/write`, { id, input: 'true', press_enter: true })).status).toBe(200);
    expect((await srv.api('PATCH', `/v2/pty/sessions/${id}`, { cols: 100, rows: 30 })).body.data).toMatchObject({ cols: 100, rows: 30 });
    expect((await srv.api('GET', `/api/sessions/${id}`)).body.refusals).toBe(0);
  });

  test('a session the person opens through an agent door is theirs: owner admin, their keys go in from the start', async () => {
    const v2 = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id as string;
    const v1 = (await srv.api('POST', '/v1/shell/sessions/create', {})).body.data.session_id as string;
    for (const id of [v2, v1]) expect((await srv.api('GET', `/api/sessions/${id}`)).body).toMatchObject({ owner: 'admin', floor: 'type' });
    const agents = (await asAgent('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id as string;
    expect((await srv.api('GET', `/api/sessions/${agents}`)).body).toMatchObject({ owner: 'claude', floor: 'watch' });
  });

  test('the viewer keyboard follows the floor: in watch mode its keys are refused, and the refusal is not an agent refusal', async () => {
    const id = (await asAgent('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id as string;
    const v = await WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view`, bearer(srv.token));
    await v.nextJson('snapshot');
    v.sendJson({ type: 'input', data: 'echo nope\r' });
    expect((await v.nextJson('error')).message).toMatch(/watch mode/);
    await srv.api('POST', `/api/sessions/${id}/floor`, { mode: 'type' });
    v.sendJson({ type: 'input', data: 'echo typed-$((3*3))\r' });
    await until(async () => (await srv.api('GET', `/v2/pty/sessions/${id}/screen`)).body.data.output === 'typed-9');
    expect((await srv.api('GET', `/api/sessions/${id}`)).body.refusals).toBe(0);
    v.close();
  });
});
