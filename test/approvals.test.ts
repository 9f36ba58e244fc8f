import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startTestServer, testBackend, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * Approve before it runs (issue 14), against real bash through real PTYs and a real server: an agent's
 * command that a rule marks `ask` does not start until the person decides, whichever door it came
 * through, and the ways of writing it that a shell allows do not slip it past the rule.
 */
let srv: TestServer;
let agentToken: string;
const work = `/tmp/ptydeck-approvals-${process.pid}`;

beforeAll(async () => {
  srv = await startTestServer();
  agentToken = (await srv.api('POST', '/api/tokens', { name: 'claude' })).body.token;
  mkdirSync(work, { recursive: true });
});
afterAll(async () => {
  await srv.close();
  rmSync(work, { recursive: true, force: true });
});
beforeEach(async () => {
  await setPolicy({ default: 'allow', rules: [] });
});

const asAgent = (method: string, path: string, body?: unknown) => srv.api(method, path, body, { token: agentToken });
const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });

async function setPolicy(policy: unknown): Promise<void> {
  const r = await srv.api('PUT', '/api/policy', policy);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

/** An agent's own terminal, created with its token (so it is gated). */
async function agentSession(): Promise<string> {
  const r = await asAgent('POST', '/v2/pty/sessions', { cwd: work });
  expect(r.status).toBe(200);
  return r.body.data.session_id;
}

/** The approval that waits for this session (polls the person's list). */
async function waiting(sessionId: string, what?: RegExp): Promise<any> {
  const found = await until(async () => {
    const list = (await srv.api('GET', '/api/approvals')).body.approvals as any[];
    return list.find((a) => a.session_id === sessionId && (!what || what.test(a.command)));
  }, 15000);
  expect(found, `an approval for ${sessionId} ${what ?? ''}`).toBeTruthy();
  return found;
}

async function noneWaiting(sessionId: string): Promise<boolean> {
  const list = (await srv.api('GET', '/api/approvals')).body.approvals as any[];
  return !list.some((a) => a.session_id === sessionId);
}

const ASK_RM = { default: 'allow', rules: [{ pattern: '\\brm\\s+-[a-z]*r', action: 'ask' }] };
const ASK_TOUCH = { default: 'allow', rules: [{ pattern: '^touch ', action: 'ask' }] };

describe('the policy', () => {
  test('only the person reads and changes it: an agent gets 403 on every approvals route', async () => {
    expect((await srv.api('GET', '/api/policy')).body).toEqual({ default: 'allow', rules: [] });
    for (const [method, path, body] of [
      ['GET', '/api/policy'],
      ['PUT', '/api/policy', { default: 'allow', rules: [] }],
      ['GET', '/api/approvals'],
      ['POST', '/api/approvals/apr_x/approve', {}],
      ['POST', '/api/approvals/apr_x/deny', { reason: 'x' }],
      ['POST', '/api/approvals/apr_x/takeover', {}],
    ] as [string, string, unknown?][]) {
      const r = await asAgent(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body.error.code).toBe('FORBIDDEN');
    }
    await expect(WsClient.open(`${srv.wsUrl}/api/approvals/events`, bearer(agentToken))).rejects.toMatchObject({ status: 403 });
  });

  test('bad rules answer 400 naming the rule and what is wrong; nothing is saved', async () => {
    await setPolicy(ASK_RM);
    const cases: [unknown, RegExp][] = [
      [{ default: 'allow', rules: [{ pattern: 'ok', action: 'ask' }, { pattern: 'foo(', action: 'ask' }] }, /rules\[1\] \(rule 2\): pattern "foo\(" is not a valid regular expression/],
      [{ default: 'allow', rules: [{ pattern: 'x', action: 'maybe' }] }, /rules\[0\] \(rule 1\): action must be "ask", "deny" or "allow" \(got "maybe"\)/],
      [{ default: 'deny', rules: [] }, /default must be "allow" or "ask"/],
      [{ default: 'allow', rules: [{ pattern: '', action: 'ask' }] }, /rules\[0\] \(rule 1\): pattern must be a non-empty string/],
      [{ default: 'allow', rules: [{ pattern: 'x', action: 'ask', agent: 'no spaces allowed' }] }, /rules\[0\] \(rule 1\): agent must be an agent's name/],
      [{ default: 'allow', rules: 'rm' }, /rules must be a list/],
      [[1, 2], /the policy must be a JSON object/],
    ];
    for (const [body, message] of cases) {
      const r = await srv.api('PUT', '/api/policy', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.code).toBe('INVALID_POLICY');
      expect(r.body.error.message).toMatch(message);
    }
    expect((await srv.api('GET', '/api/policy')).body).toEqual(ASK_RM);
  });

  test('it is kept in PTYDECK_HOME (0600) and survives a restart', async () => {
    const home = mkdirTemp();
    const policy = { default: 'ask', rules: [{ pattern: '^git push', action: 'deny', agent: 'claude' }, { pattern: '^ls\\b', action: 'allow' }] };
    const first = await startTestServer({}, { home });
    try {
      expect((await first.api('PUT', '/api/policy', policy)).status).toBe(200);
      expect(statSync(join(home, 'approvals-policy.json')).mode & 0o777).toBe(0o600);
    } finally {
      await first.close();
    }
    const again = await startTestServer({}, { home });
    try {
      expect((await again.api('GET', '/api/policy')).body).toEqual(policy);
    } finally {
      await again.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

function mkdirTemp(): string {
  const dir = join(work, `home-${Math.random().toString(16).slice(2)}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

describe('an agent command that a rule marks ask waits for the person', () => {
  test('AIO v2 exec of a gated touch waits; once approved, the file exists and the exec answers completed', async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    const file = join(work, `approved-${id}`);
    const call = asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${file}` });
    const a = await waiting(id);
    expect(a).toMatchObject({ session_id: id, agent: 'claude', command: `touch ${file}`, cwd: work, door: 'aio-v2', scope: 'line' });
    expect(a.id).toMatch(/^apr_/);
    expect(Date.parse(a.requested_at)).not.toBeNaN();
    expect(a.match).toMatchObject({ rule: 0, pattern: '^touch ', start: 0, end: 6 });
    // Waiting, it has not run.
    expect(existsSync(file)).toBe(false);
    const ok = await srv.api('POST', `/api/approvals/${a.id}/approve`, { note: 'fine' });
    expect(ok.status).toBe(200);
    const r = await call;
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'completed', exit_code: 0 });
    expect(existsSync(file)).toBe(true);
    expect(await noneWaiting(id)).toBe(true);
  });

  test('denied: AIO answers 403 saying a person denied it and why; the file never appears; the shell stays usable', async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    const file = join(work, `denied-${id}`);
    const call = asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${file}` });
    const a = await waiting(id);
    expect((await srv.api('POST', `/api/approvals/${a.id}/deny`, { reason: 'not in this directory' })).status).toBe(200);
    const r = await call;
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, data: null });
    expect(r.body.message).toBe('Denied by a person: not in this directory');
    expect(existsSync(file)).toBe(false);
    const next = await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo still-$((6*7))' });
    expect(next.body.data).toMatchObject({ status: 'completed', output: 'still-42' });
    // The screen says what happened, in one line.
    expect((await srv.api('GET', `/api/sessions/${id}/read`)).body.text).toContain('ptydeck: Denied by a person: not in this directory');
  });

  test('AIO v1 exec, native exec and native send: 403 with code DENIED on /api', async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    const v1 = asAgent('POST', '/v1/shell/exec', { id, command: `touch ${work}/v1-${id}` });
    await srv.api('POST', `/api/approvals/${(await waiting(id)).id}/deny`, { reason: 'v1 no' });
    expect(await v1).toMatchObject({ status: 403, body: { success: false, message: 'Denied by a person: v1 no' } });

    const native = asAgent('POST', `/api/sessions/${id}/exec`, { command: `touch ${work}/native-${id}` });
    await srv.api('POST', `/api/approvals/${(await waiting(id)).id}/deny`, { reason: 'native no' });
    expect(await native).toMatchObject({ status: 403, body: { error: { code: 'DENIED', message: 'Denied by a person: native no' } } });

    const send = asAgent('POST', `/api/sessions/${id}/send`, { text: `touch ${work}/send-${id}` });
    await srv.api('POST', `/api/approvals/${(await waiting(id)).id}/deny`, { reason: 'send no' });
    expect(await send).toMatchObject({ status: 403, body: { error: { code: 'DENIED', message: 'Denied by a person: send no' } } });
    for (const f of ['v1', 'native', 'send']) expect(existsSync(`${work}/${f}-${id}`)).toBe(false);

    // Approved, send answers as usual.
    const sent = asAgent('POST', `/api/sessions/${id}/send`, { text: `touch ${work}/send-ok-${id}`, idle_ms: 200 });
    await srv.api('POST', `/api/approvals/${(await waiting(id)).id}/approve`, {});
    expect((await sent).status).toBe(200);
    expect(existsSync(`${work}/send-ok-${id}`)).toBe(true);
  });

  test('MCP terminal_exec and terminal_send: a tool error with the reason', async () => {
    await setPolicy(ASK_TOUCH);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: bearer(agentToken) } }));
    try {
      const opened = await client.callTool({ name: 'terminal_open', arguments: { cwd: work } });
      const id = (opened.structuredContent as { session_id: string }).session_id;
      const exec = client.callTool({ name: 'terminal_exec', arguments: { session_id: id, command: `touch ${work}/mcp-${id}` } });
      await srv.api('POST', `/api/approvals/${(await waiting(id)).id}/deny`, { reason: 'mcp no' });
      const r = await exec;
      expect(r.isError).toBe(true);
      expect(JSON.stringify(r.content)).toContain('Denied by a person: mcp no');
      const send = client.callTool({ name: 'terminal_send', arguments: { session_id: id, text: `touch ${work}/mcp2-${id}` } });
      await srv.api('POST', `/api/approvals/${(await waiting(id)).id}/deny`, { reason: 'mcp send no' });
      expect(JSON.stringify((await send).content)).toContain('Denied by a person: mcp send no');
      expect(existsSync(`${work}/mcp-${id}`) || existsSync(`${work}/mcp2-${id}`)).toBe(false);
    } finally {
      await client.close();
    }
  });

  test("a synchronous exec's own timeout does not run while it waits", async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    // timeout 1 s: without the pause, the call would answer "running" long before the person decides.
    const call = asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${work}/slow-${id}`, timeout: 1, no_change_timeout: 1 });
    const a = await waiting(id);
    await new Promise((r) => setTimeout(r, 2500));
    await srv.api('POST', `/api/approvals/${a.id}/approve`, {});
    expect((await call).body.data).toMatchObject({ status: 'completed', exit_code: 0 });
  });

  test('"Always allow" adds an allow rule for this agent and this exact command, first in the list', async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    const command = `touch ${work}/remember-${id}.txt`;
    const call = asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command });
    const r = await srv.api('POST', `/api/approvals/${(await waiting(id)).id}/approve`, { remember: true });
    expect(r.body.rule_added).toMatchObject({ action: 'allow', agent: 'claude' });
    expect((await call).body.data.status).toBe('completed');
    const policy = (await srv.api('GET', '/api/policy')).body;
    expect(policy.rules[0]).toEqual(r.body.rule_added);
    expect(new RegExp(policy.rules[0].pattern).test(command)).toBe(true);
    expect(new RegExp(policy.rules[0].pattern).test(`${command}; rm -rf /`)).toBe(false);
    // The same command again runs without asking; a different one still asks.
    expect((await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command })).body.data.status).toBe('completed');
    const other = asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: `${command}.other` });
    await srv.api('POST', `/api/approvals/${(await waiting(id)).id}/deny`, {});
    expect((await other).status).toBe(403);
  });

  test('a deny rule refuses at once, without asking anyone', async () => {
    await setPolicy({ default: 'allow', rules: [{ pattern: '^touch ', action: 'deny' }] });
    const id = await agentSession();
    const r = await asAgent('POST', `/api/sessions/${id}/exec`, { command: `touch ${work}/never-${id}` });
    expect(r.status).toBe(403);
    expect(r.body.error.message).toBe('Denied by the approval policy: rule 1 (/^touch /) forbids this command');
    expect(existsSync(`${work}/never-${id}`)).toBe(false);
  });

  test('default ask holds every agent command; rules for another agent do not apply', async () => {
    await setPolicy({ default: 'allow', rules: [{ pattern: 'echo', action: 'deny', agent: 'someone-else' }] });
    const id = await agentSession();
    expect((await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo free' })).body.data.output).toBe('free');
    await setPolicy({ default: 'ask', rules: [] });
    const call = asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo held' });
    const a = await waiting(id);
    expect(a.match).toMatchObject({ rule: -2, pattern: null });
    await srv.api('POST', `/api/approvals/${a.id}/approve`, {});
    expect((await call).body.data.output).toBe('held');
  });
});

describe('keys: input with Enter, and raw keystrokes over the AIO and execd WebSockets', () => {
  test('AIO WebSocket: `rm -rf DIR` then Enter; after a deny DIR still exists and the terminal says why', async () => {
    await setPolicy(ASK_RM);
    const id = await agentSession();
    const dir = join(work, `ws-victim-${id}`);
    mkdirSync(dir);
    const ws = await WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${id}/ws`, bearer(agentToken));
    try {
      await ws.nextJson('ready');
      for (const ch of `rm -rf ${dir}`) ws.sendJson({ type: 'input', data: ch });
      ws.sendJson({ type: 'input', data: '\r' });
      const a = await waiting(id);
      expect(a).toMatchObject({ command: `rm -rf ${dir}`, door: 'aio-ws' });
      await srv.api('POST', `/api/approvals/${a.id}/deny`, { reason: 'keep that directory' });
      await ws.waitForOutput('ptydeck: Denied by a person: keep that directory');
      expect(existsSync(dir)).toBe(true);
      // The shell is usable: the next line runs.
      ws.sendJson({ type: 'input', data: 'echo after-$((3*3))\r' });
      await ws.waitForOutput('after-9');
      expect(existsSync(dir)).toBe(true);
    } finally {
      ws.close();
    }
  });

  test('execd WebSocket stdin frames are gated the same way', async () => {
    await setPolicy(ASK_RM);
    const execd = { 'X-EXECD-ACCESS-TOKEN': agentToken };
    const created = await srv.api('POST', '/pty', { cwd: work }, { token: null, headers: execd });
    const id = created.body.session_id as string;
    const dir = join(work, `execd-victim-${id}`);
    mkdirSync(dir);
    const ws = await WsClient.open(`${srv.wsUrl}/pty/${id}/ws`, execd);
    try {
      await ws.nextJson('connected');
      ws.ws.send(Buffer.concat([Buffer.from([0x00]), Buffer.from(`rm -rf ${dir}\r`)]));
      const a = await waiting(id);
      expect(a.door).toBe('execd');
      await srv.api('POST', `/api/approvals/${a.id}/deny`, { reason: 'execd no' });
      const log = () => srv.app.manager.get(id)!.log;
      expect(await until(() => log().read(log().start, log().end).toString().includes('ptydeck: Denied by a person: execd no'))).toBe(true);
      expect(existsSync(dir)).toBe(true);
    } finally {
      ws.close();
    }
  });

  test('a gated line typed ahead behind an innocent one, in one write, still waits', async () => {
    await setPolicy(ASK_RM);
    const id = await agentSession();
    const dir = join(work, `ahead-${id}`);
    mkdirSync(dir);
    await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: `echo first-$((1+1))\rrm -rf ${dir}\r` });
    const a = await waiting(id);
    expect(a.command).toBe(`rm -rf ${dir}`);
    await srv.api('POST', `/api/approvals/${a.id}/deny`, { reason: 'ahead' });
    await until(() => noneWaiting(id));
    expect(existsSync(dir)).toBe(true);
    // The refused line's prompt comes back before the next command can be typed.
    await until(async () => (await srv.api('GET', `/api/sessions/${id}`)).body.shellState === 'prompt');
    expect((await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo ok' })).body.data.output).toBe('ok');
  });

  test('AIO input with press_enter, typed in pieces: the line the shell runs is what is asked about', async () => {
    await setPolicy(ASK_RM);
    const id = await agentSession();
    const dir = join(work, `pieces-${id}`);
    mkdirSync(dir);
    expect((await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: 'rm -' })).status).toBe(200);
    expect((await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: 'r' })).status).toBe(200);
    expect((await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: `f ${dir}`, press_enter: true })).status).toBe(200);
    const a = await waiting(id);
    expect(a.command).toBe(`rm -rf ${dir}`);
    await srv.api('POST', `/api/approvals/${a.id}/approve`, {});
    await until(() => !existsSync(dir));
    expect(existsSync(dir)).toBe(false);
  });
});

describe('ways of writing a command do not slip it past a rule', () => {
  // Each is denied; the directory must survive every one.
  const attempts: [string, (dir: string) => string][] = [
    ['after ;', (d) => `true; rm -rf ${d}`],
    ['after &&', (d) => `true && rm -rf ${d}`],
    ['on a second line', (d) => `true\nrm -rf ${d}`],
    ['inside eval', (d) => `eval "r""m -rf ${d}"`],
    ['inside eval of a string built at run time', (d) => `eval "$(printf 'r%s -rf %s' m ${d})"`],
    ['inside bash -c', (d) => `bash -c 'rm -rf ${d}'`],
    ['split by backslash-newline', (d) => `rm \\\n-rf ${d}`],
    ['in a heredoc', (d) => `bash <<'EOF'\nrm -rf ${d}\nEOF`],
    ['with its name quoted apart', (d) => `r''m -rf ${d}`],
    ['in a subshell', (d) => `(cd / && rm -rf ${d})`],
    ['in a command substitution', (d) => `echo $(rm -rf ${d})`],
    ['after switching the hook off in the same line', (d) => `trap - DEBUG; eval "$(printf 'r%s -rf %s' m ${d})"`],
  ];
  // Calling the prompt hook by hand also prints the end-of-command marker, so the agent's own exec
  // answers early (it only misleads itself): what counts is that the command waits and never runs.
  attempts.push(['after calling the prompt hook by hand', (d) => `__ptydeck_precmd; eval "$(printf 'r%s -rf %s' m ${d})"`]);
  const endsEarly = new Set(['after calling the prompt hook by hand']);
  for (const [how, write] of attempts) {
    test(how, async () => {
      await setPolicy(ASK_RM);
      const id = await agentSession();
      const dir = join(work, `slip-${id}`);
      mkdirSync(dir);
      const call = asAgent('POST', `/api/sessions/${id}/exec`, { command: write(dir) });
      const a = await waiting(id);
      await srv.api('POST', `/api/approvals/${a.id}/deny`, { reason: how });
      const r = await call;
      if (!endsEarly.has(how)) expect(r.status, JSON.stringify(r.body)).toBe(403);
      await until(() => noneWaiting(id));
      expect(existsSync(dir)).toBe(true);
      expect(await noneWaiting(id)).toBe(true);
    });
  }

  test('an alias, a function and a script defined before the rule existed: what they run is asked about', async () => {
    const id = await agentSession();
    const dir = join(work, `defined-${id}`);
    mkdirSync(dir);
    writeFileSync(join(work, `script-${id}.sh`), `rm -rf ${dir}\n`);
    for (const c of [`alias zap='rm -rf'`, 'wipe() { rm -rf "$1"; }']) {
      expect((await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: c })).body.data.status).toBe('completed');
    }
    await setPolicy(ASK_RM);
    for (const [command, expected] of [
      [`zap ${dir}`, `rm -rf ${dir}`],
      [`wipe ${dir}`, 'rm -rf "$1"'],
      [`. ${work}/script-${id}.sh`, `rm -rf ${dir}`],
    ]) {
      const call = asAgent('POST', `/api/sessions/${id}/exec`, { command });
      const a = await waiting(id);
      // The card shows the command that would run, inside the line that was typed.
      expect(a).toMatchObject({ scope: 'command', command: expected, line: command });
      await srv.api('POST', `/api/approvals/${a.id}/deny`, { reason: 'no' });
      expect((await call).status).toBe(403);
      expect(existsSync(dir)).toBe(true);
    }
  });

  test('^C while a line waits abandons it: the approval is withdrawn and the shell is usable', async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: `touch ${work}/ctrlc-${id}`, press_enter: true });
    await waiting(id);
    await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: '\x03' });
    await until(() => noneWaiting(id));
    expect(await noneWaiting(id)).toBe(true);
    // The approval is withdrawn (the record reads 'denied') as the shell's hook lets go, a moment before the
    // shell's next prompt ends the abandoned line: until that prompt an exec is refused as one more while a
    // command runs, so wait for the prompt itself, the signal exec checks.
    expect(await until(async () => (await srv.api('GET', `/api/sessions/${id}`)).body.shellState === 'prompt')).toBe(true);
    const r = await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo ok' });
    expect(r.body.data?.output, JSON.stringify(r.body)).toBe('ok');
    expect(existsSync(`${work}/ctrlc-${id}`)).toBe(false);
  });
});

describe('the person is never gated, and the agent cannot stand in for the person', () => {
  test("the person's own keys in the viewer, and calls with the person's credential, run at once", async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    expect((await srv.api('POST', `/api/sessions/${id}/floor`, { mode: 'type' })).status).toBe(200);
    const view = await WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view`, bearer(srv.token));
    try {
      await view.nextJson('snapshot');
      view.sendJson({ type: 'input', data: `touch ${work}/person-typed-${id}\r` });
      await until(() => existsSync(`${work}/person-typed-${id}`));
      expect(existsSync(`${work}/person-typed-${id}`)).toBe(true);
      // Back at the prompt before the next command (the file exists a moment before the prompt returns).
      await until(async () => (await srv.api('GET', `/api/sessions/${id}`)).body.shellState === 'prompt');
    } finally {
      view.close();
    }
    const r = await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${work}/person-exec-${id}` });
    expect(r.body.data.status).toBe('completed');
    expect(existsSync(`${work}/person-exec-${id}`)).toBe(true);
    expect(await noneWaiting(id)).toBe(true);
  });

  test("an agent's keys typed ahead do not ride on the person's Enter", async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    await srv.api('POST', `/api/sessions/${id}/floor`, { mode: 'type' });
    // The agent leaves a line half typed; the person presses Enter on it.
    await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: `touch ${work}/half-${id}` });
    const view = await WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view`, bearer(srv.token));
    try {
      await view.nextJson('snapshot');
      view.sendJson({ type: 'input', data: '\r' });
      const a = await waiting(id);
      expect(a.agent).toBe('claude');
      await srv.api('POST', `/api/approvals/${a.id}/deny`, {});
    } finally {
      view.close();
    }
    expect(existsSync(`${work}/half-${id}`)).toBe(false);
  });

  test('an agent cannot decide its own approval; the gate port refuses a shell it does not know', async () => {
    await setPolicy(ASK_TOUCH);
    const id = await agentSession();
    const call = asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${work}/self-${id}` });
    const a = await waiting(id);
    expect((await asAgent('POST', `/api/approvals/${a.id}/approve`, {})).status).toBe(403);
    expect(await noneWaiting(id)).toBe(false);
    expect(existsSync(`${work}/self-${id}`)).toBe(false);
    // Something that is not one of ptydeck's shells gets a refusal from the gate port, not a decision.
    const port = srv.app.manager.lineGatePort;
    const answer = await new Promise<string>((resolve, reject) => {
      const c = createConnection(port, '127.0.0.1');
      let got = '';
      c.on('data', (d) => {
        got += d;
        if (got.includes('\n')) {
          c.destroy();
          resolve(got);
        }
      });
      c.on('error', reject);
      c.write(['ask', 'not-the-nonce', '7', '1', '1', 'line', '0', '/', '0', `touch ${work}/self-${id}`, ''].join('\0') + '\0');
    });
    expect(answer).toMatch(/^deny 7 ptydeck: this shell is not known to the approval gate/);
    await srv.api('POST', `/api/approvals/${a.id}/deny`, {});
    expect((await call).status).toBe(403);
  });

  test("what the hook keeps in the shell does not tell where ptydeck's credentials are", async () => {
    const id = await agentSession();
    const r = await asAgent('POST', `/v2/pty/sessions/${id}/exec`, { command: 'declare -p | grep -c ptydeck; declare -p __ptydeck_gate_port_file' });
    expect(r.body.data.status).toBe('completed');
    expect(r.body.data.output).toContain('__ptydeck_gate_port_file');
    expect(r.body.data.output).not.toContain(srv.home);
  });
});

describe('no decision in time', () => {
  test('is a denial with reason "no decision in time"', async () => {
    const short = await startTestServer({ PTYDECK_APPROVAL_TIMEOUT_SECS: '1' });
    try {
      const token = (await short.api('POST', '/api/tokens', { name: 'bot' })).body.token;
      await short.api('PUT', '/api/policy', ASK_TOUCH);
      const id = (await short.api('POST', '/v2/pty/sessions', { cwd: work }, { token })).body.data.session_id;
      const r = await short.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${work}/late-${id}` }, { token });
      expect(r.status).toBe(403);
      expect(r.body.message).toBe('Denied: no decision in time');
      expect(existsSync(`${work}/late-${id}`)).toBe(false);
    } finally {
      await short.close();
    }
  });
});

describe('shells without the hook (dash) are gated at the door', () => {
  test("an exec's command and a typed line are asked about before they reach the shell", async () => {
    const dash = await startTestServer({ PTYDECK_SHELL: '/usr/bin/dash' });
    try {
      const token = (await dash.api('POST', '/api/tokens', { name: 'bot' })).body.token;
      await dash.api('PUT', '/api/policy', ASK_TOUCH);
      const id = (await dash.api('POST', '/v2/pty/sessions', { cwd: work }, { token })).body.data.session_id;
      const pendingFor = async () =>
        until(async () => ((await dash.api('GET', '/api/approvals')).body.approvals as any[]).find((a) => a.session_id === id), 15000);

      const exec = dash.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${work}/dash-exec-${id}` }, { token });
      const a = await pendingFor();
      expect(a).toMatchObject({ command: `touch ${work}/dash-exec-${id}`, door: 'aio-v2' });
      await dash.api('POST', `/api/approvals/${a.id}/deny`, { reason: 'dash no' });
      expect(await exec).toMatchObject({ status: 403, body: { message: 'Denied by a person: dash no' } });

      await dash.api('POST', `/v2/pty/sessions/${id}/input`, { input: `touch ${work}/dash-typed-${id}`, press_enter: true }, { token });
      const b = await pendingFor();
      await dash.api('POST', `/api/approvals/${b.id}/deny`, { reason: 'typed no' });
      const session = dash.app.manager.get(id)!;
      // The refusal is shown on the terminal of an in-process PTY; not on the PTY host's or tmux's, whose
      // log offsets are the backend's own (a line of ours would shift them).
      if (testBackend === 'native') {
        expect(await until(() => session.log.read(session.log.start, session.log.end).toString().includes('ptydeck: Denied by a person: typed no'))).toBe(true);
      }

      await dash.api('POST', `/v2/pty/sessions/${id}/input`, { input: `touch ${work}/dash-ok-${id}`, press_enter: true }, { token });
      await dash.api('POST', `/api/approvals/${(await pendingFor()).id}/approve`, {});
      await until(() => existsSync(`${work}/dash-ok-${id}`));
      expect(existsSync(`${work}/dash-ok-${id}`)).toBe(true);
      expect(existsSync(`${work}/dash-exec-${id}`) || existsSync(`${work}/dash-typed-${id}`)).toBe(false);
    } finally {
      await dash.close();
    }
  });
});

describe('an agent cannot switch the gate off from inside its shell', () => {
  // Each first line is let run (approved if asked about); the `rm -rf DIR` typed after it must still wait.
  const ways = [
    // A new shell has no hook and never gives the hooked prompt back: its lines are gated at the door.
    'bash --norc',
    'env -i bash --norc --noprofile',
    'exec env -i bash --norc',
    'sh',
    // Tampering with the hook itself: asked about (ptydeck's own rule), and re-armed at the next prompt.
    'trap - DEBUG',
    'shopt -u extdebug',
    'PROMPT_COMMAND=',
  ];
  for (const first of ways) {
    test(`after \`${first}\``, async () => {
      await setPolicy(ASK_RM);
      const id = await agentSession();
      const dir = join(work, `inside-${id}`);
      mkdirSync(dir);
      await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: first, press_enter: true });
      // Asked about or not, it is let run.
      const asked = await until(async () => ((await srv.api('GET', '/api/approvals')).body.approvals as any[]).find((a) => a.session_id === id), 1500);
      if (asked) await srv.api('POST', `/api/approvals/${asked.id}/approve`, {});
      await new Promise((r) => setTimeout(r, 500));
      await asAgent('POST', `/v2/pty/sessions/${id}/input`, { input: `rm -rf ${dir}`, press_enter: true });
      const a = await waiting(id, /rm -rf/);
      expect(existsSync(dir)).toBe(true);
      await srv.api('POST', `/api/approvals/${a.id}/deny`, { reason: 'not that' });
      await new Promise((r) => setTimeout(r, 500));
      expect(existsSync(dir)).toBe(true);
    });
  }
});
