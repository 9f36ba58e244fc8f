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
  /** Stops the server, ends every session and process it started (durable ones too), deletes the home. */
  close(): Promise<void>;
}

/** The backend explicitly created sessions use in this run. */
export const testBackend = (process.env.PTYDECK_TEST_BACKEND ?? 'native') as 'native' | 'host' | 'tmux';

/** `opts.home`: start on this home directory (a restart); close() then leaves it for the caller to remove. */
export async function startTestServer(env: Record<string, string> = {}, opts: { home?: string } = {}): Promise<TestServer> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), 'ptydeck-test-home-'));
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
    // The one place that ends what a test server started: every session, durable ones too (a tmux
    // session kept for a next start that never comes would outlive the run, its home deleted).
    async close() {
      await app.stop('end-everything');
      if (!opts.home) rmSync(home, { recursive: true, force: true });
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

/**
 * Ends the PTY host of `home` (and every session it holds), if one runs, and waits until it has exited.
 * For tests that start a real `ptydeck serve`: its durable sessions outlive it by design.
 */
export async function endHost(home: string): Promise<void> {
  const { HostBackend } = await import('../src/main/terminal/backends/host-backend');
  await new HostBackend(home).shutdownHost();
}

/**
 * `ptydeck serve` as a separate process (test/server-process.ts spawnServer), with what the security
 * tests need on top: requests that may time out (a frozen server answers -1) and a kill -9 that keeps
 * the home for a successor.
 */
export interface CliProcess {
  url: string;
  token: string;
  home: string;
  proc: import('node:child_process').ChildProcess;
  /** Everything the server printed so far (stdout and stderr). */
  output(): string;
  /** JSON request; a server that does not answer within `timeoutMs` gives status -1. */
  api<T = any>(method: string, path: string, body?: unknown, opts?: { token?: string | null; timeoutMs?: number; headers?: Record<string, string> }): Promise<{ status: number; body: T }>;
  /**
   * Ends the process (SIGKILL if it does not exit after `signal`). Unless told to keep the home, also ends
   * what it kept running on purpose (its PTY host, its tmux server) and deletes the home.
   */
  stop(opts?: { signal?: NodeJS.Signals; keepHome?: boolean }): Promise<void>;
}

/** Starts `ptydeck serve` on `home` (a fresh one by default); the native backend unless `env` says otherwise. */
export async function startCliProcess(env: Record<string, string> = {}, home?: string): Promise<CliProcess> {
  const { spawnServer, endHome } = await import('./server-process');
  const dir = home ?? mkdtempSync(join(tmpdir(), 'ptydeck-cli-'));
  const srv = await spawnServer(dir, { AIO_SHELL_BACKEND: 'native', ...env });
  return {
    url: srv.url,
    token: srv.token,
    home: dir,
    proc: srv.proc,
    output: srv.output,
    async api(method, path, body, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      const t = opts.token === undefined ? srv.token : opts.token;
      if (t) headers.Authorization = `Bearer ${t}`;
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      try {
        const res = await fetch(srv.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(opts.timeoutMs ?? 20000) });
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
      const proc = srv.proc;
      const timer = setTimeout(() => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      }, 10000);
      await srv.stop(opts.signal ?? 'SIGTERM');
      clearTimeout(timer);
      if (!opts.keepHome) {
        await endHost(dir);
        endHome(dir);
      }
    },
  };
}
