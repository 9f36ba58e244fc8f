import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readStat } from '../src/main/terminal/processes';
import { startTestServer, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * AIO's bash command API (/v1/bash/*) against a real server running real bash on real pipes, written
 * from reference/aio-bash-api.md and AIO's SDK types.
 */
let srv: TestServer;
let tmp: string;
beforeAll(async () => {
  srv = await startTestServer();
  tmp = mkdtempSync(join(tmpdir(), 'ptydeck-bash-test-'));
});
afterAll(async () => {
  // Explicitly created sessions are durable on the tmux backend: end them, not only the server.
  await srv.app.manager.closeAll();
  await srv.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** Alive and not a zombie (an orphan's zombie waits for init, which may not reap it soon). */
const isAlive = (pid: number): boolean => {
  const s = readStat(pid);
  return s !== null && s.state !== 'Z';
};

const bash = (route: string, body?: unknown, token?: string) => srv.api('POST', `/v1/bash/${route}`, body, token === undefined ? {} : { token });

async function newSession(body: Record<string, unknown> = {}): Promise<string> {
  const r = await bash('sessions/create', body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.session_id;
}

/** Polls `output` with wait:true from the given offsets until `command_id` ends; returns all it read. */
async function pollToEnd(session_id: string, command_id: string, offsets: { offset: number; stderr_offset: number }) {
  let stdout = '';
  let stderr = '';
  let { offset, stderr_offset } = offsets;
  let polls = 0;
  for (;;) {
    const r = await bash('output', { session_id, command_id, offset, stderr_offset, wait: true, wait_timeout: 10 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const d = r.body.data;
    stdout += d.stdout;
    stderr += d.stderr;
    offset = d.offset;
    stderr_offset = d.stderr_offset;
    polls++;
    expect(d.command.command_id).toBe(command_id);
    if (d.command.status !== 'running') return { stdout, stderr, polls, command: d.command, offset, stderr_offset };
  }
}

describe('exec', () => {
  test('a quick command: stdout and stderr apart, exit code, offsets', async () => {
    const r = await bash('exec', { command: 'echo hi; echo oops >&2; exit 3' });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    const d = r.body.data;
    expect(d).toMatchObject({ command: 'echo hi; echo oops >&2; exit 3', status: 'completed', stdout: 'hi\n', stderr: 'oops\n', exit_code: 3, offset: 3, stderr_offset: 5 });
    expect(d.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(d.command_id).toMatch(/^[0-9a-f-]{36}$/);
    // Offsets are session-wide: the next command's output starts where this one ended.
    const next = await bash('exec', { session_id: d.session_id, command: 'printf abc' });
    expect(next.body.data).toMatchObject({ stdout: 'abc', stderr: null, exit_code: 0, offset: 6, stderr_offset: 5 });
    expect(next.body.data.command_id).not.toBe(d.command_id);
  });

  test('an empty output is null; a failing command is still completed', async () => {
    const r = await bash('exec', { command: 'false' });
    expect(r.body.data).toMatchObject({ status: 'completed', exit_code: 1, stdout: null, stderr: null });
  });

  test('a long command with a timeout answers running, then is polled to completion with wait', async () => {
    const id = await newSession();
    const first = await bash('exec', { session_id: id, command: 'for i in 1 2 3 4; do echo line$i; echo err$i >&2; sleep 0.4; done', timeout: 0.2 });
    expect(first.status).toBe(200);
    const d = first.body.data;
    expect(d.status).toBe('running');
    expect(d.exit_code).toBeNull();
    const rest = await pollToEnd(id, d.command_id, { offset: d.offset, stderr_offset: d.stderr_offset });
    expect((d.stdout ?? '') + rest.stdout).toBe('line1\nline2\nline3\nline4\n');
    expect((d.stderr ?? '') + rest.stderr).toBe('err1\nerr2\nerr3\nerr4\n');
    expect(rest.command).toMatchObject({ status: 'completed', exit_code: 0 });
    expect(rest.polls).toBeGreaterThan(1);
  });

  test('async_mode answers running at once; the command goes on', async () => {
    const r = await bash('exec', { command: 'sleep 0.3; echo done', async_mode: true });
    expect(r.body.data).toMatchObject({ status: 'running', stdout: null, exit_code: null, offset: 0, stderr_offset: 0 });
    const rest = await pollToEnd(r.body.data.session_id, r.body.data.command_id, { offset: 0, stderr_offset: 0 });
    expect(rest.stdout).toBe('done\n');
  });

  test('exec_dir runs there and becomes the session default; cd and export do not persist', async () => {
    const id = await newSession();
    expect((await bash('exec', { session_id: id, command: 'pwd; cd /; export X=1', exec_dir: tmp })).body.data.stdout).toBe(`${tmp}\n`);
    expect((await bash('exec', { session_id: id, command: 'pwd; echo "x=$X"' })).body.data.stdout).toBe(`${tmp}\nx=\n`);
    const listed = (await srv.api('GET', '/v1/bash/sessions')).body.data.find((s: any) => s.session_id === id);
    expect(listed.working_dir).toBe(tmp);
  });

  test('env is for that command only', async () => {
    const id = await newSession();
    expect((await bash('exec', { session_id: id, command: 'echo "$GREETING"', env: { GREETING: 'hello there' } })).body.data.stdout).toBe('hello there\n');
    expect((await bash('exec', { session_id: id, command: 'echo "[$GREETING]"' })).body.data.stdout).toBe('[]\n');
  });

  test("a command never reads the user's ~/.bashrc, whatever SHLVL the server was started with", async () => {
    // bash reads ~/.bashrc for `bash -c` when its stdin is a socket (Node's pipes are) and SHLVL is
    // below 1, taking it for rshd: a server started by systemd or Docker would run the rc before every
    // command (a pyenv rc waited a minute on a lock). AIO runs commands without it.
    const home = mkdtempSync(join(tmp, 'home-'));
    writeFileSync(join(home, '.bashrc'), 'echo BASHRC-WAS-READ\n');
    const r = await bash('exec', { command: 'echo ran', env: { HOME: home, SHLVL: '0' } });
    expect(r.body.data.stdout).toBe('ran\n');
  });

  test('hard_timeout kills the process group: timed_out, exit_code -1', async () => {
    const r = await bash('exec', { command: 'echo start; sleep 30 & sleep 30; echo never', hard_timeout: 0.5 });
    expect(r.body.data).toMatchObject({ status: 'timed_out', exit_code: -1, stdout: 'start\n' });
  });

  test('max_output_length middle-truncates a synchronous answer, and 0 keeps it whole', async () => {
    const cut = await bash('exec', { command: 'printf "a%.0s" $(seq 1 300); printf "z%.0s" $(seq 1 300)', max_output_length: 100 });
    const out: string = cut.body.data.stdout;
    expect(out.startsWith('a'.repeat(50))).toBe(true);
    expect(out.endsWith('z'.repeat(50))).toBe(true);
    expect(out).toContain('[500 characters truncated]');
    expect(cut.body.data.offset).toBe(600);
    const whole = await bash('exec', { command: 'printf "a%.0s" $(seq 1 300)', max_output_length: 0 });
    expect(whole.body.data.stdout).toBe('a'.repeat(300));
  });

  test('an unknown session id creates that session (as AIO does); a bad exec_dir or env name is 400', async () => {
    const made = await bash('exec', { session_id: 'bash-made-by-exec', command: 'true' });
    expect(made.body.data.session_id).toBe('bash-made-by-exec');
    const dir = await bash('exec', { command: 'true', exec_dir: '/no/such/dir' });
    expect(dir.status).toBe(400);
    expect(dir.body.message).toMatch(/exec_dir/);
    const env = await bash('exec', { command: 'true', env: { '1BAD': 'x' } });
    expect(env.status).toBe(400);
    expect(env.body.message).toMatch(/env: invalid variable name "1BAD"/);
  });

  test('a missing or mistyped field is 422 in FastAPI shape', async () => {
    const r = await bash('exec', {});
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ success: false, data: null });
    expect(r.body.detail).toEqual([{ loc: ['body', 'command'], msg: 'field required', type: 'invalid_type' }]);
    const t = await bash('exec', { command: 'true', timeout: 'soon' });
    expect(t.status).toBe(422);
    expect(t.body.message).toMatch(/body\.timeout/);
  });

  test('exec on a terminal session is refused with a message that says so', async () => {
    const term = await srv.api('POST', '/v2/pty/sessions', { cwd: tmp });
    const id = term.body.data.session_id;
    const r = await bash('exec', { session_id: id, command: 'true' });
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/is a terminal, not a bash-API session/);
    await srv.api('DELETE', `/v2/pty/sessions/${id}`);
  });

  test('synchronous execs queue on one session; an async one does not hold the lock', async () => {
    const id = await newSession();
    const slow = bash('exec', { session_id: id, command: 'sleep 0.5; echo first' });
    const fast = bash('exec', { session_id: id, command: 'echo second' });
    const [a, b] = await Promise.all([slow, fast]);
    expect(a.body.data.stdout).toBe('first\n');
    // The second started only after the first ended: its output begins after the first's.
    expect(b.body.data.stdout).toBe('second\n');
    expect(b.body.data.offset).toBe(a.body.data.offset + 'second\n'.length);
  });
});

describe('output', () => {
  test('reads from offsets; a session that never ran a command waits out wait_timeout', async () => {
    const id = await newSession();
    const idle = await bash('output', { session_id: id, wait: true, wait_timeout: 0.2 });
    expect(idle.body.data).toEqual({ session_id: id, stdout: '', stderr: '', offset: 0, stderr_offset: 0, command: null });
    await bash('exec', { session_id: id, command: 'echo one; echo two >&2' });
    const all = await bash('output', { session_id: id });
    expect(all.body.data).toMatchObject({ stdout: 'one\n', stderr: 'two\n', offset: 4, stderr_offset: 4 });
    expect(all.body.data.command).toMatchObject({ command: 'echo one; echo two >&2', status: 'completed', exit_code: 0 });
    const tail = await bash('output', { session_id: id, offset: 2, stderr_offset: 4 });
    expect(tail.body.data).toMatchObject({ stdout: 'e\n', stderr: '', offset: 4, stderr_offset: 4 });
    const beyond = await bash('output', { session_id: id, offset: 99, stderr_offset: 99 });
    expect(beyond.body.data).toMatchObject({ stdout: '', stderr: '', offset: 4, stderr_offset: 4 });
  });

  test('a multi-byte character split across reads is never cut in two', async () => {
    const id = await newSession();
    const r = await bash('exec', { session_id: id, command: "printf '\\xe2\\x98'; sleep 0.4; printf '\\x83 snow'", async_mode: true });
    const rest = await pollToEnd(id, r.body.data.command_id, { offset: 0, stderr_offset: 0 });
    expect(rest.stdout).toBe('☃ snow');
    expect(rest.offset).toBe(Buffer.byteLength('☃ snow'));
  });

  test('unknown session: 404 naming it; missing session_id: 422', async () => {
    const r = await bash('output', { session_id: 'no-such-bash' });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ success: false, message: 'Session no-such-bash not found', data: null });
    const m = await bash('output', { offset: 1 });
    expect(m.status).toBe(422);
    expect(m.body.detail[0].loc).toEqual(['body', 'session_id']);
    const neg = await bash('output', { session_id: 'x', offset: -1 });
    expect(neg.status).toBe(422);
    expect(neg.body.message).toMatch(/body\.offset/);
  });
});

describe('write', () => {
  test('stdin reaches a running command verbatim; no newline is added', async () => {
    const r = await bash('exec', { command: 'read -r a; read -r b; echo "got $a and $b"', async_mode: true });
    const { session_id, command_id } = r.body.data;
    expect((await bash('write', { session_id, input: 'first\nsec' })).body).toEqual({ success: true, message: 'Input written', data: null });
    expect((await bash('write', { session_id, input: 'ond\n', command_id })).status).toBe(200);
    const rest = await pollToEnd(session_id, command_id, { offset: 0, stderr_offset: 0 });
    expect(rest.stdout).toBe('got first and second\n');
  });

  test('with nothing running: 400 "No running process to write to"; unknown session 404; missing input 422', async () => {
    const id = await newSession();
    const r = await bash('write', { session_id: id, input: 'x' });
    expect(r.status).toBe(400);
    expect(r.body.message).toBe('No running process to write to');
    expect((await bash('write', { session_id: 'no-such-bash', input: 'x' })).status).toBe(404);
    const m = await bash('write', { session_id: id });
    expect(m.status).toBe(422);
    expect(m.body.detail[0].loc).toEqual(['body', 'input']);
  });
});

describe('kill', () => {
  test('signals the current command: it ends killed, exit code minus the signal', async () => {
    const r = await bash('exec', { command: 'echo up; sleep 30', async_mode: true });
    const { session_id, command_id } = r.body.data;
    await until(async () => (await bash('output', { session_id })).body.data.stdout === 'up\n');
    const k = await bash('kill', { session_id });
    expect(k.body).toEqual({ success: true, message: 'Signal SIGTERM sent', data: null });
    const rest = await pollToEnd(session_id, command_id, { offset: 3, stderr_offset: 0 });
    expect(rest.command).toMatchObject({ status: 'killed', exit_code: -15 });
    // The session stays open.
    expect((await bash('exec', { session_id, command: 'echo still here' })).body.data.stdout).toBe('still here\n');
  });

  test('SIGINT reaches the whole group; with nothing running kill still answers 200', async () => {
    const r = await bash('exec', { command: 'sleep 30 & sleep 30; wait', async_mode: true });
    const { session_id, command_id } = r.body.data;
    expect((await bash('kill', { session_id, signal: 'SIGINT' })).body.message).toBe('Signal SIGINT sent');
    const rest = await pollToEnd(session_id, command_id, { offset: 0, stderr_offset: 0 });
    expect(rest.command.status).toBe('killed');
    expect((await bash('kill', { session_id, signal: 'SIGKILL' })).status).toBe(200);
  });

  test('an unknown signal is 422 naming it; an unknown session 404; a missing session_id 422', async () => {
    const id = await newSession();
    const bad = await bash('kill', { session_id: id, signal: 'SIGSTOPPP' });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toMatch(/body\.signal/);
    expect((await bash('kill', { session_id: 'no-such-bash' })).status).toBe(404);
    expect((await bash('kill', {})).status).toBe(422);
  });
});

describe('sessions, create, close', () => {
  test('create with an id and exec_dir; again with the same id returns it unchanged', async () => {
    const r = await bash('sessions/create', { session_id: 'job-1', exec_dir: tmp });
    expect(r.body.data).toMatchObject({ session_id: 'job-1', status: 'ready', working_dir: tmp, current_command: null, command_count: 0 });
    expect(Date.parse(r.body.data.created_at)).not.toBeNaN();
    const again = await bash('sessions/create', { session_id: 'job-1', exec_dir: '/' });
    expect(again.body.data.working_dir).toBe(tmp);
    const bad = await bash('sessions/create', { exec_dir: 'relative/dir' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/exec_dir/);
    expect((await bash('sessions/create', {})).body.data.session_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('snapshot_path is sourced before every command; a directory is refused', async () => {
    const script = join(tmp, 'snap.sh');
    writeFileSync(script, 'export FROM_SNAPSHOT=yes\nalias ll="echo aliased"\n');
    const id = (await bash('sessions/create', { snapshot_path: script })).body.data.session_id;
    expect((await bash('exec', { session_id: id, command: 'echo "$FROM_SNAPSHOT"' })).body.data.stdout).toBe('yes\n');
    const dir = await bash('sessions/create', { snapshot_path: tmp });
    expect(dir.status).toBe(400);
    expect(dir.body.message).toMatch(/snapshot_path .* is not a regular file/);
  });

  test('list shows the running command and the count; close ends the command and the session', async () => {
    const id = await newSession();
    await bash('exec', { session_id: id, command: 'true' });
    await bash('exec', { session_id: id, command: 'sleep 30', async_mode: true });
    const listed = (await srv.api('GET', '/v1/bash/sessions')).body.data.find((s: any) => s.session_id === id);
    expect(listed).toMatchObject({ status: 'ready', current_command: 'sleep 30', command_count: 2 });
    const c = await srv.api('POST', `/v1/bash/sessions/${id}/close`);
    expect(c.body).toEqual({ success: true, message: `Session ${id} closed`, data: null });
    expect((await srv.api('GET', '/v1/bash/sessions')).body.data.some((s: any) => s.session_id === id)).toBe(false);
    const after = await bash('output', { session_id: id });
    expect(after.status).toBe(404);
    expect(after.body.message).toBe(`Session ${id} not found`);
    const unknown = await srv.api('POST', '/v1/bash/sessions/never-was/close');
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ success: false, message: 'Session never-was not found', data: null });
  });

  test('closing tears down every process the session started, the earlier commands\' too', async () => {
    const id = await newSession();
    const first = await bash('exec', { session_id: id, command: 'sleep 300 & echo $!' });
    const bgPid = Number(first.body.data.stdout.trim());
    // A later command is running when the session closes; the earlier background child must die as
    // well, although it started before that command (so it is not found as the command's descendant).
    await bash('exec', { session_id: id, command: 'sleep 0.05' });
    const later = await bash('exec', { session_id: id, command: 'echo $$; exec sleep 300', async_mode: true });
    const laterPid = Number((await until(async () => (await bash('output', { session_id: id, offset: later.body.data.offset })).body.data.stdout)).trim());
    expect(readStat(bgPid)!.startTime).toBeLessThan(readStat(laterPid)!.startTime);
    expect(isAlive(bgPid)).toBe(true);
    await srv.api('POST', `/v1/bash/sessions/${id}/close`);
    expect(isAlive(bgPid)).toBe(false);
  });

  test('a command that leaves a background child holding its pipes still completes', async () => {
    const r = await bash('exec', { command: 'sleep 100 & echo started' });
    expect(r.body.data).toMatchObject({ status: 'completed', exit_code: 0, stdout: 'started\n' });
    await srv.api('POST', `/v1/bash/sessions/${r.body.data.session_id}/close`);
  });

  test('a bash session is listed by the other doors, as a pipe session', async () => {
    const id = await newSession({ session_id: 'bash-seen-everywhere' });
    const native = await srv.api('GET', `/api/sessions/${id}`);
    expect(native.body).toMatchObject({ id, backend: 'pipe', origin: 'aio-bash', shellState: 'prompt' });
    const v2 = await srv.api('GET', '/v2/pty/sessions');
    expect(v2.body.data.sessions[id]).toMatchObject({ backend: 'pipe' });
    const v1 = await srv.api('GET', '/v1/shell/sessions');
    expect(Object.keys(v1.body.data.sessions)).toContain(id);
    // A terminal is not listed among bash sessions.
    const term = (await srv.api('POST', '/v2/pty/sessions', { cwd: tmp })).body.data.session_id;
    expect((await srv.api('GET', '/v1/bash/sessions')).body.data.some((s: any) => s.session_id === term)).toBe(false);
    await srv.api('DELETE', `/v2/pty/sessions/${term}`);
    // What runs shows in the native summary too.
    await bash('exec', { session_id: id, command: 'sleep 30', async_mode: true });
    const busy = await srv.api('GET', `/api/sessions/${id}`);
    expect(busy.body).toMatchObject({ shellState: 'busy', command: { command: 'sleep 30', status: 'running' } });
    await srv.api('DELETE', `/api/sessions/${id}`);
  });
});

describe('ownership, floor and limits, as on every door', () => {
  test("another agent's bash session is 404 on every route and cannot be closed", async () => {
    const mallory = (await srv.api('POST', '/api/tokens', { name: 'mallory-bash' })).body.token;
    const id = await newSession();
    for (const route of ['output', 'write', 'kill']) {
      const r = await bash(route, { session_id: id, input: 'x' }, mallory);
      expect(r.status, route).toBe(404);
    }
    const close = await srv.api('POST', `/v1/bash/sessions/${id}/close`, undefined, { token: mallory });
    expect(close.body.success).toBe(false);
    expect((await srv.api('GET', '/v1/bash/sessions', undefined, { token: mallory })).body.data.some((s: any) => s.session_id === id)).toBe(false);
    // exec with that id does not reach it either: the id is taken.
    const exec = await bash('exec', { session_id: id, command: 'true' }, mallory);
    expect(exec.status).toBe(400);
    // No oracle: another principal's id reads as any id that cannot be had (docs/SECURITY.md).
    expect(exec.body.message).toMatch(/is not available; choose another id/);
    expect((await bash('output', { session_id: id })).status).toBe(200);
  });

  test("while a person holds the floor, an agent's exec, write, kill and close answer 423; output still works", async () => {
    const alice = (await srv.api('POST', '/api/tokens', { name: 'alice-bash' })).body.token;
    const r = await bash('exec', { command: 'cat', async_mode: true }, alice);
    const { session_id } = r.body.data;
    await srv.api('POST', `/api/sessions/${session_id}/takeover`);
    const refused = [
      await bash('exec', { session_id, command: 'true' }, alice),
      await bash('write', { session_id, input: 'x\n' }, alice),
      await bash('kill', { session_id }, alice),
      await srv.api('POST', `/v1/bash/sessions/${session_id}/close`, undefined, { token: alice }),
    ];
    for (const x of refused) {
      expect(x.status).toBe(423);
      expect(x.body.message).toMatch(/A person has taken control/);
    }
    expect((await bash('output', { session_id }, alice)).status).toBe(200);
    // The refusals are counted for the viewer, by agent.
    const summary = (await srv.api('GET', `/api/sessions/${session_id}`)).body;
    expect(summary.refusals).toBe(4);
    expect(summary.refusedBy).toEqual([{ agent: 'alice-bash', count: 4, actions: ['exec', 'input', 'signal', 'close'], last: expect.any(String) }]);
    // The person's own credential is never refused.
    expect((await bash('write', { session_id, input: 'from-person\n' })).status).toBe(200);
    await srv.api('POST', `/api/sessions/${session_id}/release`);
    expect((await bash('write', { session_id, input: 'back\n' }, alice)).status).toBe(200);
    await until(async () => (await bash('output', { session_id }, alice)).body.data.stdout === 'from-person\nback\n');
    expect((await srv.api('POST', `/v1/bash/sessions/${session_id}/close`, undefined, { token: alice })).body.success).toBe(true);
  });

  test('a queued exec asks the floor again when its turn comes', async () => {
    const bob = (await srv.api('POST', '/api/tokens', { name: 'bob-bash' })).body.token;
    const id = (await bash('sessions/create', {}, bob)).body.data.session_id;
    const gate = join(tmp, 'queue-gate');
    const first = bash('exec', { session_id: id, command: `until [ -e ${gate} ]; do sleep 0.05; done` }, bob);
    await until(async () => (await srv.api('GET', '/v1/bash/sessions', undefined, { token: bob })).body.data.find((s: any) => s.session_id === id)?.current_command);
    const queued = bash('exec', { session_id: id, command: 'echo should-not-run' }, bob);
    await srv.api('POST', `/api/sessions/${id}/takeover`);
    writeFileSync(gate, '');
    expect((await first).status).toBe(200);
    const refused = await queued;
    expect(refused.status).toBe(423);
    expect((await bash('output', { session_id: id }, bob)).body.data.stdout).toBe('');
    await srv.api('POST', `/api/sessions/${id}/release`);
    await srv.api('POST', `/v1/bash/sessions/${id}/close`, undefined, { token: bob });
  });

  test('input over the limit is 413', async () => {
    const r = await bash('exec', { command: 'cat >/dev/null', async_mode: true });
    const big = 'x'.repeat(srv.app.server.ctx.config.limits.inputBytes + 1);
    const w = await bash('write', { session_id: r.body.data.session_id, input: big });
    expect(w.status).toBe(413);
    expect(w.body.message).toMatch(/input is \d+ bytes/);
    await srv.api('POST', `/v1/bash/sessions/${r.body.data.session_id}/close`);
  });
});

describe('limits on a server of their own', () => {
  test('the session limit and the creation rate limit apply to bash sessions', async () => {
    const small = await startTestServer({ AIO_SHELL_MAX_SESSIONS: '2', PTYDECK_MAX_CREATES_PER_MINUTE: '4' });
    try {
      const api = (route: string, body: unknown) => small.api('POST', `/v1/bash/${route}`, body);
      const a = await api('exec', { command: 'sleep 30', async_mode: true });
      const b = await api('exec', { command: 'sleep 30', async_mode: true });
      expect([a.status, b.status]).toEqual([200, 200]);
      // Both are busy: nothing can be reclaimed.
      const c = await api('sessions/create', {});
      expect(c.status).toBe(400);
      expect(c.body.message).toMatch(/limit of 2 sessions/);
      await small.api('POST', `/v1/bash/sessions/${a.body.data.session_id}/close`);
      await small.api('POST', `/v1/bash/sessions/${b.body.data.session_id}/close`);
      const d = await api('sessions/create', {});
      expect(d.status).toBe(200);
      const e = await api('sessions/create', {});
      expect(e.status).toBe(429);
      expect(e.body.message).toMatch(/Too many sessions created/);
    } finally {
      await small.close();
    }
  });
});

describe('in the viewer', () => {
  test('a viewer of a bash session gets its output by channel: transcript, stdout, stderr', async () => {
    const id = await newSession();
    await bash('exec', { session_id: id, command: 'echo to-out; echo to-err >&2; exit 4' });
    const view = await WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view`, { Authorization: `Bearer ${srv.token}` });
    try {
      const snap = await view.nextJson('snapshot');
      expect(snap).toMatchObject({ data: '', channels: true, offset: 0 });
      const byChannel = async (until: string) => {
        const got: { channel: number; text: string }[] = [];
        while (!got.map((g) => g.text).join('').includes(until)) {
          const f = await view.next((x) => x.binary !== undefined);
          got.push({ channel: f.binary![0], text: f.binary!.subarray(1).toString() });
        }
        // Consecutive frames of one channel are one piece of output.
        return got.reduce<{ channel: number; text: string }[]>((acc, g) => {
          const last = acc[acc.length - 1];
          if (last && last.channel === g.channel) last.text += g.text;
          else acc.push({ ...g });
          return acc;
        }, []);
      };
      expect(await byChannel('[exit 4]')).toEqual([
        { channel: 3, text: '$ echo to-out; echo to-err >&2; exit 4\n' },
        { channel: 1, text: 'to-out\n' },
        { channel: 2, text: 'to-err\n' },
        { channel: 3, text: '[exit 4]\n' },
      ]);
      // Live output arrives the same way.
      await bash('exec', { session_id: id, command: 'echo live >&2' });
      expect(await byChannel('[exit 0]')).toEqual([
        { channel: 3, text: '$ echo live >&2\n' },
        { channel: 2, text: 'live\n' },
        { channel: 3, text: '[exit 0]\n' },
      ]);
    } finally {
      view.close();
      await srv.api('POST', `/v1/bash/sessions/${id}/close`);
    }
  });

  test('Interrupt from the viewer sends SIGINT to the running command, which ends killed', async () => {
    const r = await bash('exec', { command: 'sleep 30', async_mode: true });
    const { session_id, command_id } = r.body.data;
    const sent = await srv.api('POST', `/api/sessions/${session_id}/interrupt`);
    expect(sent.body.sent).toBe('SIGINT');
    const rest = await pollToEnd(session_id, command_id, { offset: 0, stderr_offset: 0 });
    // Any signal sent through ptydeck counts as a kill, whichever door sent it.
    expect(rest.command).toMatchObject({ status: 'killed', exit_code: -2 });
    await srv.api('POST', `/v1/bash/sessions/${session_id}/close`);
  });
});
