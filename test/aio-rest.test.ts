import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, sleep, until, type TestServer } from './helpers';

/**
 * The AIO Sandbox REST dialects (v1 and v2) against a real server with real bash in real PTYs,
 * written from seed 003 and the v1 OpenAPI file.
 */
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  await srv.close();
});

async function v2Session(body: Record<string, unknown> = {}): Promise<string> {
  const r = await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp', ...body });
  expect(r.status).toBe(200);
  expect(r.body.success).toBe(true);
  return r.body.data.session_id;
}

const exec = (sid: string, body: Record<string, unknown>) => srv.api('POST', `/v2/pty/sessions/${sid}/exec`, body);

describe('seed 003: answer a prompt', () => {
  test('v2: exec async, screen, input, screen until completed', async () => {
    const sid = await v2Session();
    const started = await exec(sid, { command: 'read -p "Name: " name; echo Hello $name', async: true });
    expect(started.body.data.status).toBe('running');
    expect(started.body.data.output).toBeNull();
    await sleep(300);
    let screen = (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data;
    expect(screen.output).toBe('Name: ');
    expect(screen.status).toBe('running');
    expect(screen.command).toBe('read -p "Name: " name; echo Hello $name');
    const input = await srv.api('POST', `/v2/pty/sessions/${sid}/input`, { input: 'Alice', press_enter: true });
    expect(input.body.success).toBe(true);
    await until(async () => (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data.status !== 'running');
    screen = (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data;
    expect(screen.output).toBe('Name: Alice\nHello Alice');
    expect(screen.status).toBe('completed');
    expect(screen.exit_code).toBe(0);
    expect(screen.command).toBeNull();
    expect((await srv.api('DELETE', `/v2/pty/sessions/${sid}`)).body.success).toBe(true);
  });

  test('v1: exec async_mode, view, write, wait', async () => {
    const created = await srv.api('POST', '/v1/shell/sessions/create', { exec_dir: '/tmp' });
    expect(created.body.data.working_dir).toBe('/tmp');
    const id = created.body.data.session_id;
    await srv.api('POST', '/v1/shell/exec', { id, command: 'read -p "Name: " name; echo Hello $name', async_mode: true });
    await sleep(300);
    let view = (await srv.api('POST', '/v1/shell/view', { id })).body.data;
    expect(view.output).toBe('Name: ');
    expect(view.status).toBe('running');
    await srv.api('POST', '/v1/shell/write', { id, input: 'Alice', press_enter: true });
    const waited = await srv.api('POST', '/v1/shell/wait', { id, seconds: 5 });
    expect(waited.body.data.status).toBe('completed');
    view = (await srv.api('POST', '/v1/shell/view', { id })).body.data;
    expect(view.output).toBe('Name: Alice\nHello Alice');
    expect(view.exit_code).toBe(0);
    const cleanup = await srv.api('DELETE', `/v1/shell/sessions/${id}`);
    expect(cleanup.body.success).toBe(true);
  });
});

test('printf shell-doc-ok gives the seed response on both routes', async () => {
  for (const route of ['v2', 'v1'] as const) {
    const sid = await v2Session();
    const r =
      route === 'v2'
        ? await exec(sid, { command: 'printf shell-doc-ok' })
        : await srv.api('POST', '/v1/shell/exec', { id: sid, command: 'printf shell-doc-ok' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      message: 'Command executed',
      data: {
        session_id: sid,
        command: 'printf shell-doc-ok',
        status: 'completed',
        output: 'shell-doc-ok',
        console: [{ ps1: '$ ', command: 'printf shell-doc-ok', output: 'shell-doc-ok' }],
        exit_code: 0,
      },
    });
  }
});

test('cd and export persist between execs, across dialects', async () => {
  const sid = await v2Session();
  await exec(sid, { command: 'cd /usr/share && export PTYDECK_TEST_VAR=kept-value' });
  const r = await srv.api('POST', '/v1/shell/exec', { id: sid, command: 'pwd; echo $PTYDECK_TEST_VAR' });
  expect(r.body.data.output).toBe('/usr/share\nkept-value');
  const listed = await srv.api('GET', `/v2/pty/sessions/${sid}`);
  expect(listed.body.data.working_dir).toBe('/usr/share');
});

test('exit codes 0, 1 and 42', async () => {
  const sid = await v2Session();
  for (const [command, code] of [
    ['true', 0],
    ['false', 1],
    ['(exit 42)', 42],
    ['sh -c "exit 7"', 7],
  ] as const) {
    const r = await exec(sid, { command });
    expect(r.body.data.status).toBe('completed');
    expect(r.body.data.exit_code).toBe(code);
  }
});

test('output that ends inside an escape sequence (a program killed mid-sequence) still completes, with its exit code', async () => {
  const sid = await v2Session();
  // The shell's end-of-command marker follows the cut sequence at once: it must not be taken as part of it.
  const r = await exec(sid, { command: "printf 'half\\033[3'; (exit 7)", timeout: 15 });
  expect(r.body.data).toMatchObject({ status: 'completed', exit_code: 7 });
  expect(r.body.data.output).toMatch(/^half/);
  const next = await exec(sid, { command: 'echo next' });
  expect(next.body.data).toMatchObject({ status: 'completed', exit_code: 0, output: 'next' });
});

test('a command that replaces PS1 and PS0 leaves the next prompt with its markers: commands after it complete with their exit codes', async () => {
  const sid = await v2Session();
  expect((await exec(sid, { command: "PS1='$ '; PS0=''", timeout: 15 })).body.data).toMatchObject({ status: 'completed', exit_code: 0 });
  const r = await exec(sid, { command: 'printf "%s|%q" "$PS1" "$PS0"; (exit 5)', timeout: 15 });
  expect(r.body.data).toMatchObject({ status: 'completed', exit_code: 5 });
  const [ps1, ps0] = String(r.body.data.output).split('|');
  expect(ps1).toMatch(/^\$ \\\[\\033\]633;B;[0-9a-f]+\\007\\\]$/);
  expect(ps0).toMatch(/633;C;[0-9a-f]+/);
});

test('a syntax error completes with exit code 2 and its message, not the echo', async () => {
  const sid = await v2Session();
  const r = await exec(sid, { command: 'if then' });
  expect(r.body.data.status).toBe('completed');
  expect(r.body.data.exit_code).toBe(2);
  expect(r.body.data.output).toMatch(/syntax error/);
  expect(r.body.data.output).not.toMatch(/^if then/);
});

test('multi-line commands, tabs and quotes run as one command', async () => {
  const sid = await v2Session();
  const r = await exec(sid, { command: "x='it''s'\nprintf '%s\\t%s\\n' \"$x\" done\necho \"a\tb\"" });
  expect(r.body.data.status).toBe('completed');
  expect(r.body.data.output).toBe('its\tdone\na\tb');
  expect(r.body.data.console.at(-1).command).toBe("x='it''s'\nprintf '%s\\t%s\\n' \"$x\" done\necho \"a\tb\"");
});

describe('timeouts', () => {
  test('timeout returns running while the command goes on; wait sees it finish', async () => {
    const sid = await v2Session();
    const r = await exec(sid, { command: 'sleep 1.5; echo finished', timeout: 0.5 });
    expect(r.body.data.status).toBe('running');
    expect(r.body.data.exit_code).toBeNull();
    expect(r.body.message).toMatch(/still running/);
    const w = await srv.api('POST', `/v2/pty/sessions/${sid}/wait`, { seconds: 5 });
    expect(w.body.data.status).toBe('completed');
    const screen = (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data;
    expect(screen.output).toBe('finished');
  });

  test('hard_timeout interrupts with ^C, exit_code null, and the session takes the next command', async () => {
    const sid = await v2Session();
    const r = await exec(sid, { command: 'sleep 30', hard_timeout: 0.5 });
    expect(r.body.data.status).toBe('hard_timeout');
    expect(r.body.data.exit_code).toBeNull();
    const next = await exec(sid, { command: 'echo next' });
    expect(next.body.data.status).toBe('completed');
    expect(next.body.data.output).toBe('next');
  });

  test('hard_timeout escalates when the program ignores SIGINT', async () => {
    const sid = await v2Session();
    const r = await exec(sid, { command: "python3 -c 'import signal,time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)'", hard_timeout: 0.5 });
    expect(r.body.data.status).toBe('hard_timeout');
    const next = await exec(sid, { command: 'echo alive' });
    expect(next.body.data.output).toBe('alive');
  });

  test('no_change_timeout interrupts a silent command; the session goes on', async () => {
    const sid = await v2Session();
    const r = await exec(sid, { command: 'echo start; sleep 30', no_change_timeout: 1 });
    expect(r.body.data.status).toBe('no_change_timeout');
    expect(r.body.data.exit_code).toBeNull();
    expect(r.body.data.output).toMatch(/^start/);
    const next = await exec(sid, { command: 'echo next' });
    expect(next.body.data.output).toBe('next');
  });

  test('no_change_timeout does not apply to async commands', async () => {
    const sid = await v2Session({ no_change_timeout: 1 });
    await exec(sid, { command: 'sleep 2; echo survived', async: true });
    await sleep(2600);
    const screen = (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data;
    expect(screen.status).toBe('completed');
    expect(screen.output).toBe('survived');
  });

  test('output that keeps changing is not a no_change_timeout', async () => {
    const sid = await v2Session();
    const r = await exec(sid, { command: 'for i in 1 2 3 4; do echo tick $i; sleep 0.4; done', no_change_timeout: 1 });
    expect(r.body.data.status).toBe('completed');
    expect(r.body.data.output).toBe('tick 1\ntick 2\ntick 3\ntick 4');
  });
});

test('a second exec while one runs answers 400 Session already has a running command', async () => {
  const sid = await v2Session();
  await exec(sid, { command: 'sleep 3', async: true });
  const r = await exec(sid, { command: 'echo no' });
  expect(r.status).toBe(400);
  expect(r.body).toEqual({ success: false, message: 'Session already has a running command', data: null });
  const v1 = await srv.api('POST', '/v1/shell/exec', { id: sid, command: 'echo no' });
  expect(v1.status).toBe(400);
  expect(v1.body.message).toBe('Session already has a running command');
  await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
});

test('output over 30,000 bytes keeps the first and last 15,000; v1 truncate:false keeps it all', async () => {
  const sid = await v2Session();
  const cmd = "python3 -c \"import sys; sys.stdout.write('A'*20000 + 'B'*20000)\"";
  const r = await exec(sid, { command: cmd });
  const out: string = r.body.data.output;
  expect(out).toBe('A'.repeat(15000) + '\n[... Observation truncated due to length ...]\n' + 'B'.repeat(15000));
  const full = await srv.api('POST', '/v1/shell/exec', { id: sid, command: cmd, truncate: false });
  expect(full.body.data.output).toBe('A'.repeat(20000) + 'B'.repeat(20000));
  const truncatedV1 = await srv.api('POST', '/v1/shell/exec', { id: sid, command: cmd });
  expect(Buffer.byteLength(truncatedV1.body.data.output)).toBe(30000 + '\n[... Observation truncated due to length ...]\n'.length);
});

test("the console keeps each command's first and last 15,000 bytes, also where escapes make the output render much shorter than it printed", async () => {
  const sid = await v2Session();
  const notice = '\n[... Observation truncated due to length ...]\n';
  const lastConsole = async (command: string): Promise<string> => {
    const r = await srv.api('POST', '/v1/shell/exec', { id: sid, command });
    expect(r.status).toBe(200);
    const entries = r.body.data.console as { command: string; output: string }[];
    expect(entries.at(-1)!.command).toBe(command);
    return entries.at(-1)!.output;
  };
  expect(await lastConsole("python3 -c \"import sys; sys.stdout.write('A'*100000 + 'B'*100000)\"")).toBe('A'.repeat(15000) + notice + 'B'.repeat(15000));
  // Four bytes of SGR before every character: 240 KB printed, 60,000 characters read.
  expect(await lastConsole("python3 -c \"import sys; sys.stdout.write(''.join('\\x1b[m' + c for c in 'A'*30000 + 'B'*30000))\"")).toBe('A'.repeat(15000) + notice + 'B'.repeat(15000));
});

test('unicode output survives intact', async () => {
  const sid = await v2Session();
  const text = 'héllo wörld — 世界 🎉 ✓';
  const r = await exec(sid, { command: `echo '${text}'` });
  expect(r.body.data.output).toBe(text);
});

test('input reaches the PTY verbatim, control characters included', async () => {
  const sid = await v2Session();
  await exec(sid, { command: 'cat -v', async: true });
  await sleep(200);
  await srv.api('POST', `/v2/pty/sessions/${sid}/input`, { input: 'a\u0001b\u001b[Ac', press_enter: true });
  await until(async () => /\^A/.test((await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data.output));
  const screen = (await srv.api('GET', `/v2/pty/sessions/${sid}/screen`)).body.data;
  expect(screen.output).toContain('a^Ab^[[Ac');
  await srv.api('POST', `/v2/pty/sessions/${sid}/input`, { input: '\u0004' });
  const w = await srv.api('POST', `/v2/pty/sessions/${sid}/wait`, { seconds: 5 });
  expect(w.body.data.status).toBe('completed');
});

test('PATCH resizes the terminal (stty size reads it back)', async () => {
  const sid = await v2Session({ cols: 100, rows: 30 });
  expect((await exec(sid, { command: 'stty size' })).body.data.output).toBe('30 100');
  const p = await srv.api('PATCH', `/v2/pty/sessions/${sid}`, { cols: 120, rows: 40 });
  expect(p.body.data.cols).toBe(120);
  expect((await exec(sid, { command: 'stty size' })).body.data.output).toBe('40 120');
});

test('creating under an existing id returns that session; a missing directory answers 400', async () => {
  const a = await srv.api('POST', '/v2/pty/sessions', { id: 'same-id', cwd: '/tmp' });
  await exec('same-id', { command: 'export MARK=first' });
  const b = await srv.api('POST', '/v2/pty/sessions', { id: 'same-id', cwd: '/' });
  expect(a.body.data.session_id).toBe('same-id');
  expect(b.body.data.session_id).toBe('same-id');
  expect(b.body.data.created).toBe(false);
  expect((await exec('same-id', { command: 'echo $MARK' })).body.data.output).toBe('first');
  const bad = await srv.api('POST', '/v2/pty/sessions', { cwd: '/no/such/dir' });
  expect(bad.status).toBe(400);
  expect(bad.body.message).toMatch(/does not exist/);
  const v1bad = await srv.api('POST', '/v1/shell/sessions/create', { exec_dir: '/no/such/dir' });
  expect(v1bad.status).toBe(400);
});

test('v1 exec without id creates a session; an unknown id is 404', async () => {
  const r = await srv.api('POST', '/v1/shell/exec', { command: 'echo made' });
  expect(r.body.data.output).toBe('made');
  const sid = r.body.data.session_id;
  expect((await srv.api('GET', `/v2/pty/sessions/${sid}`)).status).toBe(200);
  const missing = await srv.api('POST', '/v1/shell/exec', { id: 'does-not-exist', command: 'echo x' });
  expect(missing.status).toBe(404);
  expect(missing.body.message).toBe('Session not found');
});

test('v1 exec_dir moves the shell there; strict refuses a missing one', async () => {
  const r = await srv.api('POST', '/v1/shell/exec', { command: 'pwd', exec_dir: '/usr' });
  expect(r.body.data.output).toBe('/usr');
  const id = r.body.data.session_id;
  expect((await srv.api('POST', '/v1/shell/exec', { id, command: 'pwd' })).body.data.output).toBe('/usr');
  const strict = await srv.api('POST', '/v1/shell/exec', { id, command: 'pwd', exec_dir: '/nope', strict: true });
  expect(strict.body.data.status).toBe('terminated');
  expect(strict.body.data.exit_code).toBe(1);
  const lax = await srv.api('POST', '/v1/shell/exec', { id, command: 'pwd', exec_dir: '/nope' });
  expect(lax.body.data.output).toBe('/usr');
});

test('signal stops the command and ends the session; a second stop is 404; DELETE of a gone id is 200 success:false', async () => {
  const sid = await v2Session();
  await exec(sid, { command: 'sleep 60', async: true });
  const s = await srv.api('POST', `/v2/pty/sessions/${sid}/signal`, { signal: 'SIGINT' });
  expect(s.status).toBe(200);
  const list = await srv.api('GET', '/v2/pty/sessions');
  expect(Object.keys(list.body.data.sessions)).not.toContain(sid);
  expect((await srv.api('POST', `/v2/pty/sessions/${sid}/signal`, {})).status).toBe(404);
  const del = await srv.api('DELETE', `/v2/pty/sessions/${sid}`);
  expect(del.status).toBe(200);
  expect(del.body.success).toBe(false);
});

test('v1 listing, stats, kill and capabilities have the documented shapes', async () => {
  const sid = await v2Session();
  const sessions = (await srv.api('GET', '/v1/shell/sessions')).body.data.sessions;
  expect(sessions[sid]).toMatchObject({ working_dir: '/tmp', status: 'idle', current_command: null });
  expect(typeof sessions[sid].age_seconds).toBe('number');
  const stats = (await srv.api('GET', '/v1/shell/sessions/stats')).body.data;
  expect(stats).toMatchObject({ max_sessions: 20, session_timeout: 3600 });
  expect(stats.total_sessions).toBeGreaterThan(0);
  const caps = (await srv.api('GET', '/v1/capabilities')).body.data;
  expect(caps.exec.pty).toBe(true);
  const kill = await srv.api('POST', '/v1/shell/kill', { id: sid });
  expect(kill.body.data.status).toBe('terminated');
  expect((await srv.api('POST', '/v1/shell/view', { id: sid })).status).toBe(404);
  const url = await srv.api('GET', `/v1/shell/terminal-url?session_id=nope`);
  expect(url.status).toBe(404);
});

test('credentials: /health needs none, everything else answers 401 without a valid token', async () => {
  expect((await srv.api('GET', '/health', undefined, { token: null })).status).toBe(200);
  const none = await srv.api('GET', '/v2/pty/sessions', undefined, { token: null });
  expect(none.status).toBe(401);
  expect(none.body.message).toMatch(/Missing credential/);
  expect((await srv.api('POST', '/v1/shell/exec', { command: 'id' }, { token: 'wrong-token' })).status).toBe(401);
  const viaHeader = await fetch(`${srv.url}/v2/pty/sessions`, { headers: { 'x-api-key': srv.token } });
  expect(viaHeader.status).toBe(200);
});

test('validation errors name the field', async () => {
  const sid = await v2Session();
  const r = await exec(sid, { command: 42 });
  expect(r.status).toBe(422);
  expect(r.body.message).toMatch(/body\.command/);
  const missing = await srv.api('POST', '/v1/shell/write', { id: sid });
  expect(missing.status).toBe(422);
  expect(missing.body.message).toMatch(/body\.input: field required/);
  const cols = await srv.api('POST', '/v2/pty/sessions', { cols: -5 });
  expect(cols.status).toBe(422);
  expect(cols.body.message).toMatch(/body\.cols/);
});
