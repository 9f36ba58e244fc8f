import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startCliProcess, type CliProcess } from './helpers';

/**
 * Paths an agent names (cwd, exec_dir) on every door, and what the server's own environment may leak
 * through them. The server runs as its own process here: a path that hangs it must not hang the tests.
 */
const SECRET = 'pdk_admin_paths-test-secret-0123456789';
let srv: CliProcess;
let agent: string;
let tmp: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'ptydeck-paths-'));
  symlinkSync('/proc/self', join(tmp, 'link-to-proc'));
  srv = await startCliProcess({ PTYDECK_TOKEN: SECRET });
  agent = (await srv.api('POST', '/api/tokens', { name: 'pathfinder' })).body.token;
});
afterAll(async () => {
  await srv?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const healthy = async (): Promise<boolean> => (await srv.api('GET', '/health', undefined, { timeoutMs: 10000 })).status === 200;

describe('a path never reaches a call that can hang', () => {
  const pseudo = ['/proc/ptydeck-x', '/proc/self/ptydeck-x', '/proc/ptydeck-x/y/z', '/sys/ptydeck-x', '/dev/ptydeck-x', '/sys/fs/cgroup/ptydeck-x', '/dev/pts/ptydeck-x'];

  test.each(pseudo)('execd POST /pty {cwd: %s} is refused at once, and the server keeps answering', async (cwd) => {
    const r = await srv.api('POST', '/pty', { cwd }, { token: agent, timeoutMs: 10000 });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.code).toBe('INVALID_REQUEST_BODY');
    expect(r.body.message).toMatch(/\bcwd\b/);
    expect(r.body.message).toMatch(/pseudo-filesystem/);
    expect(await healthy()).toBe(true);
    expect(existsSync(cwd)).toBe(false);
  });

  test('a symbolic link into /proc is followed before deciding', async () => {
    const r = await srv.api('POST', '/pty', { cwd: join(tmp, 'link-to-proc', 'x') }, { token: agent, timeoutMs: 10000 });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.message).toMatch(/pseudo-filesystem \(proc at \/proc\)/);
    expect(await healthy()).toBe(true);
  });

  test('an ordinary new directory is still created, as execd does', async () => {
    const dir = join(tmp, 'made', 'by', 'execd');
    const r = await srv.api('POST', '/pty', { cwd: dir }, { token: agent });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(existsSync(dir)).toBe(true);
  });

  test('a path under a file, or with a component over NAME_MAX, is refused naming cwd', async () => {
    for (const cwd of ['/etc/passwd/x', join(tmp, 'n'.repeat(300)), 'relative/x']) {
      const r = await srv.api('POST', '/pty', { cwd }, { token: agent, timeoutMs: 10000 });
      expect([cwd, r.status]).toEqual([cwd, 400]);
      expect(r.body.message).toMatch(/\bcwd\b/);
    }
  });

  test('every other door checks an existing directory without creating anything', async () => {
    const cases: [string, string, Record<string, unknown>, RegExp][] = [
      ['POST', '/v2/pty/sessions', { cwd: '/proc/ptydeck-x' }, /cwd/],
      ['POST', '/v1/shell/sessions/create', { exec_dir: '/proc/ptydeck-x' }, /exec_dir/],
      ['POST', '/api/sessions', { cwd: '/sys/ptydeck-x' }, /cwd/],
    ];
    for (const [method, path, body, names] of cases) {
      const r = await srv.api(method, path, body, { token: agent, timeoutMs: 10000 });
      expect([path, r.status]).toEqual([path, 400]);
      expect(JSON.stringify(r.body)).toMatch(names);
    }
    const exec = await srv.api('POST', '/v1/shell/exec', { command: 'pwd', exec_dir: '/proc/ptydeck-x', strict: true }, { token: agent, timeoutMs: 10000 });
    expect(exec.body.data.status).toBe('terminated');
    expect(await healthy()).toBe(true);
  });
});

describe("the server's own environment stays out of reach", () => {
  test.each(['/dev/null/$PTYDECK_TOKEN', 'TMP/${PTYDECK_TOKEN}', '$PTYDECK_HOME/x', 'TMP/$PTYDECK_TOKEN/../x'])('execd cwd %s is not expanded against the server environment', async (pattern) => {
    const cwd = pattern.replace('TMP', tmp);
    const r = await srv.api('POST', '/pty', { cwd }, { token: agent, timeoutMs: 10000 });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).not.toContain(SECRET);
    expect(r.body.message).toMatch(/variable PTYDECK_(TOKEN|HOME) is not defined in the session's environment/);
  });

  test('variables of the environment the shell gets still expand ($HOME)', async () => {
    const r = await srv.api('POST', '/pty', { cwd: '$HOME' }, { token: agent });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  });

  test("a native session's shell cannot read the token from its parent's environment", async () => {
    const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' }, { token: agent })).body.data.session_id;
    const run = async (command: string) => (await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command }, { token: agent })).body.data.output as string;
    expect(await run('echo $PPID')).toBe(String(srv.proc.pid));
    const parent = await run(`tr '\\0' '\\n' < /proc/$PPID/environ`);
    expect(parent).toContain('PATH=');
    expect(parent).not.toContain(SECRET);
    expect(parent).not.toContain('PTYDECK_TOKEN');
    expect(await run('env')).not.toContain(SECRET);
    expect(await run(`tr '\\0' ' ' < /proc/$PPID/cmdline`)).not.toContain(SECRET);
  });
});

describe('the PTY host (the default durable backend) holds no secret either', () => {
  let host: CliProcess;
  beforeAll(async () => {
    host = await startCliProcess({ PTYDECK_TOKEN: SECRET, AIO_SHELL_BACKEND: 'host' });
  });
  afterAll(async () => {
    await host?.stop();
  });

  test("a host session's shell reads no token in its own, the host's or the server's environment", async () => {
    const created = await host.api('POST', '/v2/pty/sessions', { cwd: '/tmp' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const sid = created.body.data.session_id as string;
    const run = async (command: string) => (await host.api('POST', `/v2/pty/sessions/${sid}/exec`, { command })).body.data.output as string;
    const summary = (await host.api('GET', `/api/sessions/${sid}`)).body;
    expect(summary.backend ?? summary.session?.backend).toBe('host');
    // The shell's parent is the PTY host, not the server.
    const ppid = (await run('echo $PPID')).trim();
    expect(ppid).not.toBe(String(host.proc.pid));
    expect(await run(`tr '\\0' ' ' < /proc/$PPID/cmdline`)).toContain('pty-host');
    const hostEnv = await run(`tr '\\0' '\\n' < /proc/$PPID/environ`);
    expect(hostEnv).toContain('PATH=');
    expect(hostEnv).not.toContain(SECRET);
    expect(hostEnv).not.toContain('PTYDECK_TOKEN');
    const serverEnv = await run(`tr '\\0' '\\n' < /proc/${host.proc.pid}/environ`);
    expect(serverEnv).toContain('PATH=');
    expect(serverEnv).not.toContain(SECRET);
    expect(await run('env')).not.toContain(SECRET);
    expect(await run(`tr '\\0' '\\n' < /proc/$$/environ`)).not.toContain(SECRET);
  });
});
