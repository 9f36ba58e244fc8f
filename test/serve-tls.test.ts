import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../src/main/config';
import { startTestServer, until, type TestServer } from './helpers';

/**
 * No token in clear across a network: `ptydeck serve` off loopback needs TLS or --insecure; with
 * --tls-cert/--tls-key it serves HTTPS and WSS; Host and Origin accept the names the person configures
 * (a reverse proxy's host without a port, and its https:// origin); a deck reaches a TLS remote that
 * has a self-signed certificate when given that certificate (--ca).
 */
let dir: string;
let certFile: string;
let keyFile: string;
let cert: string;
let tlsServer: TestServer;
let proxied: TestServer;
let deck: TestServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ptydeck-tls-'));
  certFile = join(dir, 'cert.pem');
  keyFile = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
  cert = readFileSync(certFile, 'utf8');
  [tlsServer, proxied, deck] = await Promise.all([
    startTestServer({ PTYDECK_TLS_CERT: certFile, PTYDECK_TLS_KEY: keyFile, PTYDECK_ALLOWED_HOSTS: 'deck.example.com' }),
    startTestServer({ PTYDECK_ALLOWED_HOSTS: 'proxy.example,other.example:8443' }),
    startTestServer(),
  ]);
});

afterAll(async () => {
  await Promise.all([tlsServer?.close(), proxied?.close(), deck?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

/** A raw request, so Host and Origin go out exactly as written (and TLS trusts our test certificate). */
function raw(srv: TestServer, path: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const tls = srv.url.startsWith('https:');
  return new Promise((resolve, reject) => {
    const req = (tls ? httpsRequest : httpRequest)(
      { host: '127.0.0.1', port: srv.port, path, method, headers: { Host: `127.0.0.1:${srv.port}`, ...headers }, setHost: false, ...(tls ? { ca: cert, servername: 'localhost' } : {}) },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('serve off loopback', () => {
  const env = { ...process.env, PTYDECK_HOME: '/nonexistent', PTYDECK_TLS_CERT: '', PTYDECK_TLS_KEY: '', PTYDECK_HOST: '' };
  test('a non-loopback --host without TLS is refused unless --insecure, and the message says how', () => {
    expect(() => loadConfig({ host: '0.0.0.0' }, env)).toThrow(ConfigError);
    expect(() => loadConfig({ host: '0.0.0.0' }, env)).toThrow(/in clear.*--tls-cert CERT\.pem --tls-key KEY\.pem.*ssh -L.*--insecure/s);
    expect(loadConfig({ host: '0.0.0.0', insecure: true }, env)).toMatchObject({ host: '0.0.0.0', insecure: true, tls: null });
    expect(loadConfig({ host: '0.0.0.0', tlsCert: certFile, tlsKey: keyFile }, env).tls?.cert).toContain('BEGIN CERTIFICATE');
    for (const host of ['127.0.0.1', 'localhost', '::1', '127.0.0.2']) expect(loadConfig({ host }, env).host).toBe(host);
  });

  test('ptydeck serve --host 0.0.0.0 without TLS exits at once, saying how to do it safely', () => {
    const cli = join(__dirname, '..', 'out', 'main', 'cli.js');
    // `npm test` builds before running; a bare `vitest run` without a build cannot test the CLI.
    if (!existsSync(cli)) expect.fail(`the CLI is not built (${cli}); run npm run build`);
    const run = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(cli)}).run(process.argv.slice(1))`, 'serve', '--host', '0.0.0.0', '--port', '0'], {
      env: { ...process.env, PTYDECK_HOME: dir, PTYDECK_TOKEN: '' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/ptydeck: listening on 0\.0\.0\.0 \(not loopback\) would send tokens in clear.*--tls-cert.*--insecure/s);
  });

  test('--tls-cert and --tls-key go together, and must be readable', () => {
    expect(() => loadConfig({ tlsCert: certFile }, env)).toThrow(/go together/);
    expect(() => loadConfig({ tlsCert: join(dir, 'missing.pem'), tlsKey: keyFile }, env)).toThrow(/--tls-cert: cannot read/);
  });
});

describe('HTTPS and WSS', () => {
  test('the API answers over https; plain http on the same port gets nothing', async () => {
    expect(tlsServer.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ok = await raw(tlsServer, '/api/whoami', { Authorization: `Bearer ${tlsServer.token}` });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ principal: 'admin', kind: 'admin' });
    const plain = await new Promise<number | string>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port: tlsServer.port, path: '/health' }, (res) => resolve(res.statusCode ?? 0));
      req.on('error', (e) => resolve((e as NodeJS.ErrnoException).code ?? 'error'));
      req.end();
    });
    expect(plain === 400 || typeof plain === 'string').toBe(true);
  });

  test('the viewer cookie is Secure over https', async () => {
    const login = await raw(tlsServer, '/api/login', { 'Content-Type': 'application/json' }, 'POST', JSON.stringify({ token: tlsServer.token }));
    expect(login.status).toBe(200);
    expect(String(login.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Strict.*; Secure/);
  });

  test('a WebSocket upgrades over wss', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${tlsServer.port}/api/events`, { headers: { Authorization: `Bearer ${tlsServer.token}` }, ca: cert });
    const first = await new Promise<string>((resolve, reject) => {
      ws.once('message', (d) => resolve(String(d)));
      ws.once('error', reject);
    });
    expect(JSON.parse(first).type).toBe('hello');
    ws.close();
  });

  test('connections that never start their TLS handshake count against the cap on unauthenticated ones, oldest closed first', async () => {
    // The default cap is 32: 40 silent TCP connections, as a slowloris at the TLS layer would open.
    const silent: { sock: Socket; closed: boolean }[] = [];
    for (let i = 0; i < 40; i++) {
      const sock = tcpConnect(tlsServer.port, '127.0.0.1');
      const c = { sock, closed: false };
      sock.on('error', () => undefined);
      sock.on('close', () => (c.closed = true));
      await new Promise<void>((resolve) => sock.once('connect', () => resolve()).once('close', () => resolve()));
      silent.push(c);
    }
    try {
      expect(await until(() => silent.filter((c) => c.closed).length >= 8, 5000, 20), `${silent.filter((c) => c.closed).length} of 40 closed`).toBe(true);
      expect(silent.slice(0, 8).every((c) => c.closed)).toBe(true);
      // A real client still gets through, its TLS socket counted in place of its raw one.
      const ok = await raw(tlsServer, '/api/whoami', { Authorization: `Bearer ${tlsServer.token}` });
      expect(ok.status).toBe(200);
    } finally {
      for (const c of silent) c.sock.destroy();
    }
  });
});

describe('Host and Origin for names the person configures', () => {
  const auth = (srv: TestServer) => ({ Authorization: `Bearer ${srv.token}` });

  test("a reverse proxy's host without a port, and its https:// origin, are accepted; others are not", async () => {
    expect((await raw(proxied, '/api/whoami', { ...auth(proxied), Host: 'proxy.example' })).status).toBe(200);
    expect((await raw(proxied, '/api/whoami', { ...auth(proxied), Host: `proxy.example:${proxied.port}` })).status).toBe(200);
    expect((await raw(proxied, '/api/whoami', { ...auth(proxied), Host: 'proxy.example', Origin: 'https://proxy.example' })).status).toBe(200);
    expect((await raw(proxied, '/api/whoami', { ...auth(proxied), Host: 'proxy.example', Origin: 'http://proxy.example' })).status).toBe(200);
    // A configured port is that port only.
    expect((await raw(proxied, '/api/whoami', { ...auth(proxied), Host: 'other.example:8443', Origin: 'https://other.example:8443' })).status).toBe(200);
    for (const [host, origin] of [
      ['proxy.example:9999', undefined],
      ['other.example', undefined],
      ['proxy.example', 'https://evil.example'],
      ['proxy.example', 'https://proxy.example.evil.example'],
      [`127.0.0.1:${proxied.port}`, `https://127.0.0.1:${proxied.port}`],
    ] as const) {
      const res = await raw(proxied, '/api/whoami', { ...auth(proxied), Host: host, ...(origin ? { Origin: origin } : {}) });
      expect(res.status, `${host} ${origin}`).toBe(403);
    }
  });

  test('over TLS our own origin is https://, and a configured name works without a port', async () => {
    expect((await raw(tlsServer, '/api/whoami', { ...auth(tlsServer), Origin: `https://127.0.0.1:${tlsServer.port}` })).status).toBe(200);
    expect((await raw(tlsServer, '/api/whoami', { ...auth(tlsServer), Origin: `http://127.0.0.1:${tlsServer.port}` })).status).toBe(403);
    expect((await raw(tlsServer, '/api/whoami', { ...auth(tlsServer), Host: 'deck.example.com', Origin: 'https://deck.example.com' })).status).toBe(200);
  });
});

describe('a TLS remote', () => {
  test("is reached over https and wss when the deck is given its certificate; without it, the status says why", async () => {
    const agentToken = (await rawJson(tlsServer, 'POST', '/api/tokens', { name: 'far-agent' })).token;
    await rawJson(tlsServer, 'POST', '/v2/pty/sessions', { id: 'over-tls', cwd: '/tmp' }, agentToken);

    expect((await deck.api('POST', '/api/remotes', { name: 'untrusted', url: tlsServer.url, token: tlsServer.token })).status).toBe(201);
    const untrusted = await until(async () => (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string; state: string }) => r.name === 'untrusted' && r.state === 'offline'));
    expect(untrusted.reason).toMatch(/certificate is not trusted.*--ca/);

    expect((await deck.api('POST', '/api/remotes', { name: 'secure', url: tlsServer.url, token: tlsServer.token, ca: cert })).status).toBe(201);
    await until(async () => (await deck.api('GET', '/api/sessions')).body.sessions.some((s: { id: string }) => s.id === 'secure/over-tls'));
    const view = new WebSocket(`${deck.wsUrl}/api/sessions/${encodeURIComponent('secure/over-tls')}/view`, { headers: { Authorization: `Bearer ${deck.token}` } });
    const first = await new Promise<string>((resolve, reject) => {
      view.once('message', (d) => resolve(String(d)));
      view.once('error', reject);
    });
    expect(JSON.parse(first).type).toBe('snapshot');
    view.close();
    for (const n of ['untrusted', 'secure']) await deck.api('DELETE', `/api/remotes/${n}`);
  });
});

async function rawJson(srv: TestServer, method: string, path: string, body: unknown, token = srv.token): Promise<any> {
  const res = await raw(srv, path, { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, method, JSON.stringify(body));
  return JSON.parse(res.body);
}


