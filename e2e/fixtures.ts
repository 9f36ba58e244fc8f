import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The built headless server (`ptydeck serve`) as a separate process, the way a person runs it. */
export interface CliServer {
  url: string;
  /** The person's (admin) token. */
  token: string;
  /** An agent's own token (name `agent`), made at start: what the tests' "agent" calls with. */
  agentToken: string;
  /** The viewer's address (no credential in it). */
  viewerUrl: string;
  home: string;
  /** A fresh one-time login link (what `ptydeck url` prints). */
  loginUrl(): Promise<string>;
  proc: ChildProcess;
  api<T = any>(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

export async function startCliServer(env: Record<string, string> = {}): Promise<CliServer> {
  const home = mkdtempSync(join(tmpdir(), 'ptydeck-e2e-'));
  const proc = spawn(process.execPath, [join(__dirname, '..', 'bin', 'ptydeck.js'), 'serve', '--port', '0'], {
    env: { ...process.env, PTYDECK_TOKEN: '', ...env, PTYDECK_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  proc.stdout!.on('data', (d) => (log += d));
  proc.stderr!.on('data', (d) => (log += d));
  const runtime = join(home, 'runtime.json');
  const deadline = Date.now() + 15000;
  while (!existsSync(runtime)) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const info = JSON.parse(readFileSync(runtime, 'utf8')) as { url: string; token: string; viewerUrl: string };
  const made = await fetch(info.url + '/api/tokens', {
    method: 'POST',
    headers: { Authorization: `Bearer ${info.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'agent' }),
  });
  if (made.status !== 201) throw new Error(`could not create the agent token: ${made.status} ${await made.text()}`);
  const agentToken = ((await made.json()) as { token: string }).token;
  return {
    ...info,
    agentToken,
    home,
    proc,
    async loginUrl() {
      const res = await fetch(`${info.url}/api/login-links`, { method: 'POST', headers: { Authorization: `Bearer ${info.token}` } });
      if (!res.ok) throw new Error(`no login link: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { url: string }).url;
    },
    async api(method, path, body, token = info.token) {
      const res = await fetch(info.url + path, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
}
