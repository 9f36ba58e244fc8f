import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer, type ServerProcess } from '../test/server-process';

/** The built headless server (`ptydeck serve`) as a separate process, the way a person runs it. */
export interface CliServer extends ServerProcess {
  /** An agent's own token (name `agent`), made at start: what the tests' "agent" calls with. */
  agentToken: string;
  /** A fresh one-time login link (what `ptydeck url` prints); `viewerUrl` carries no credential. */
  loginUrl(): Promise<string>;
  api<T = any>(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: T }>;
  /** Ends the server and everything it started (test/server-process.ts), and deletes its home. */
  stop(): Promise<void>;
}

export async function startCliServer(env: Record<string, string> = {}): Promise<CliServer> {
  const srv = await spawnServer(mkdtempSync(join(tmpdir(), 'ptydeck-e2e-')), env);
  try {
    const made = await fetch(srv.url + '/api/tokens', {
      method: 'POST',
      headers: { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'agent' }),
    });
    if (made.status !== 201) throw new Error(`could not create the agent token: ${made.status} ${await made.text()}`);
    const agentToken = ((await made.json()) as { token: string }).token;
    return {
      ...srv,
      agentToken,
      async loginUrl() {
        const res = await fetch(`${srv.url}/api/login-links`, { method: 'POST', headers: { Authorization: `Bearer ${srv.token}` } });
        if (!res.ok) throw new Error(`no login link: ${res.status} ${await res.text()}`);
        return ((await res.json()) as { url: string }).url;
      },
      async api(method, path, body, token = srv.token) {
        const res = await fetch(srv.url + path, {
          method,
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : null };
      },
      stop: () => srv.close(),
    };
  } catch (err) {
    await srv.close();
    throw err;
  }
}
