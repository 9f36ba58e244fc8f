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
    // The one place that ends what a test server started: every session, durable ones too (a tmux
    // session kept for a next start that never comes would outlive the run, its home deleted).
    async close() {
      await app.stop('end-everything');
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

/**
 * Ends the PTY host of `home` (and every session it holds), if one runs, and waits until it has exited.
 * For tests that start a real `ptydeck serve`: its durable sessions outlive it by design.
 */
export async function endHost(home: string): Promise<void> {
  const { HostBackend } = await import('../src/main/terminal/backends/host-backend');
  await new HostBackend(home).shutdownHost();
}
