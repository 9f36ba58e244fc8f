import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, until, type TestServer } from './helpers';

/**
 * Connections that send slowly or not at all: header time, body time and idle time are bounded, and
 * connections that have not authenticated are capped, without cutting a long synchronous exec short
 * (its request arrives at once; only its answer takes long, and that is never bounded).
 */
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ PTYDECK_HEADERS_TIMEOUT_MS: '5000', PTYDECK_BODY_TIMEOUT_MS: '6000', PTYDECK_MAX_UNAUTHENTICATED_CONNECTIONS: '4' });
});
afterAll(async () => {
  await srv.close();
});

interface Conn {
  sock: Socket;
  received: () => string;
  closed: () => boolean;
}

function open(): Promise<Conn> {
  return new Promise((resolve, reject) => {
    let data = '';
    let closed = false;
    const sock = connect(srv.port, '127.0.0.1', () => resolve({ sock, received: () => data, closed: () => closed }));
    sock.on('data', (d) => (data += d.toString('latin1')));
    sock.on('close', () => (closed = true));
    sock.on('error', () => undefined);
    sock.once('error', reject);
  });
}

test('a body that trickles in is cut off with 408 and the connection closed', async () => {
  const c = await open();
  c.sock.write(`POST /v2/pty/sessions HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nAuthorization: Bearer ${srv.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
  const drip = setInterval(() => c.sock.writable && c.sock.write(' '), 200);
  try {
    expect(await until(() => c.closed(), 30_000), 'the slow body was never cut off').toBe(true);
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
  } finally {
    clearInterval(drip);
    c.sock.destroy();
  }
}, 60_000);

test('an unauthenticated login body cannot be large: 413 before reading it', async () => {
  const c = await open();
  c.sock.write(`POST /api/login HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"token":"`);
  try {
    expect(await until(() => /^HTTP\/1\.1 \d{3} /.test(c.received()), 30_000)).toBe(true);
    expect(c.received()).toMatch(/^HTTP\/1\.1 413 /);
  } finally {
    c.sock.destroy();
  }
}, 60_000);

test('idle unauthenticated connections beyond the cap are closed, oldest first; real clients still get through', async () => {
  const idle: Conn[] = [];
  for (let i = 0; i < 12; i++) idle.push(await open());
  // The header timeout (5 s) would close them all eventually; the cap closes all but 4 at once.
  expect(await until(() => idle.filter((c) => !c.closed()).length <= 4, 3000, 20), `${idle.filter((c) => !c.closed()).length} idle connections still open`).toBe(true);
  expect(idle.slice(0, 8).every((c) => c.closed())).toBe(true);
  const ok = await srv.api('GET', '/v2/pty/sessions');
  expect(ok.status).toBe(200);
  idle.forEach((c) => c.sock.destroy());
});

test('a synchronous exec that answers long after the body timeout still gets its answer', async () => {
  const sid = (await srv.api('POST', '/v2/pty/sessions', { cwd: '/tmp' })).body.data.session_id;
  const r = await srv.api('POST', `/v2/pty/sessions/${sid}/exec`, { command: 'sleep 8; echo slow-but-fine' });
  expect(r.status).toBe(200);
  expect(r.body.data).toMatchObject({ status: 'completed', output: 'slow-but-fine' });
});
