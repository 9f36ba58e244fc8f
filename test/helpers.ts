import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/main/config';
import { startPtydeck, type Ptydeck } from '../src/main/app';

/** A real ptydeck server on a free loopback port, with its own home directory, for one test file. */
export interface TestServer {
  url: string;
  wsUrl: string;
  port: number;
  token: string;
  home: string;
  app: Ptydeck;
  /** JSON request with the admin token (or `token`); returns status and parsed body. */
  api<T = any>(method: string, path: string, body?: unknown, opts?: { token?: string | null; headers?: Record<string, string> }): Promise<{ status: number; body: T }>;
  close(): Promise<void>;
}

/** The backend explicitly created sessions use in this run. */
export const testBackend = (process.env.PTYDECK_TEST_BACKEND ?? 'native') as 'native' | 'tmux';

export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  const home = mkdtempSync(join(tmpdir(), 'ptydeck-test-home-'));
  // The same suites run on both backends (vitest projects set PTYDECK_TEST_BACKEND); native by default.
  const backend = process.env.PTYDECK_TEST_BACKEND ?? 'native';
  const config = loadConfig({ port: '0' }, { ...process.env, PTYDECK_TOKEN: '', PTYDECK_TEARDOWN_GRACE_MS: '1000', AIO_SHELL_BACKEND: backend, ...env, PTYDECK_HOME: home });
  const app = await startPtydeck(config);
  const url = app.server.url;
  const token = app.tokens.adminToken;
  return {
    url,
    wsUrl: url.replace(/^http/, 'ws'),
    port: app.server.port,
    token,
    home,
    app,
    async api(method, path, body, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      const t = opts.token === undefined ? token : opts.token;
      if (t) headers.Authorization = `Bearer ${t}`;
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        // not JSON: keep the text
      }
      return { status: res.status, body: parsed as any };
    },
    async close() {
      await app.stop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
export async function until<T>(fn: () => T | Promise<T>, timeoutMs = 10000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await fn();
  while (!last && Date.now() < deadline) {
    await sleep(everyMs);
    last = await fn();
  }
  return last;
}

/** `ptydeck serve` as a separate process: what a person runs, with its own environment and home. */
export interface CliProcess {
  url: string;
  token: string;
  home: string;
  proc: import('node:child_process').ChildProcess;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  /** JSON request; a server that does not answer within `timeoutMs` gives status -1. */
  api<T = any>(method: string, path: string, body?: unknown, opts?: { token?: string | null; timeoutMs?: number; headers?: Record<string, string> }): Promise<{ status: number; body: T }>;
  /** Ends the process (SIGKILL if it does not exit after `signal`); keeps the home unless told. */
  stop(opts?: { signal?: NodeJS.Signals; keepHome?: boolean }): Promise<void>;
}

const cliEntry = join(__dirname, '..', 'out', 'main', 'cli.js');

export async function startCliProcess(env: Record<string, string> = {}, home?: string): Promise<CliProcess> {
  const { existsSync, readFileSync } = await import('node:fs');
  const { spawn } = await import('node:child_process');
  if (!existsSync(cliEntry)) throw new Error(`the CLI is not built (${cliEntry}); run npm run build`);
  const dir = home ?? mkdtempSync(join(tmpdir(), 'ptydeck-cli-'));
  rmSync(join(dir, 'runtime.json'), { force: true });
  const proc = spawn(process.execPath, ['-e', `require(${JSON.stringify(cliEntry)}).run(process.argv.slice(1))`, 'serve', '--port', '0'], {
    env: { ...process.env, PTYDECK_TOKEN: '', AIO_SHELL_BACKEND: 'native', ...env, PTYDECK_HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const runtime = join(dir, 'runtime.json');
  const ok = await until(() => existsSync(runtime) || proc.exitCode !== null, 20000);
  if (!ok || proc.exitCode !== null) throw new Error(`the server did not start:\n${out}`);
  const info = JSON.parse(readFileSync(runtime, 'utf8')) as { url: string; token: string };
  return {
    url: info.url,
    token: info.token,
    home: dir,
    proc,
    output: () => out,
    async api(method, path, body, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      const t = opts.token === undefined ? info.token : opts.token;
      if (t) headers.Authorization = `Bearer ${t}`;
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      try {
        const res = await fetch(info.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(opts.timeoutMs ?? 20000) });
        const text = await res.text();
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          // not JSON
        }
        return { status: res.status, body: parsed as any };
      } catch (err) {
        return { status: -1, body: String(err) as any };
      }
    },
    async stop(opts = {}) {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill(opts.signal ?? 'SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
        await exited;
        clearTimeout(timer);
      }
      if (!opts.keepHome) rmSync(dir, { recursive: true, force: true });
    },
  };
}
