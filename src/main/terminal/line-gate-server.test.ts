import { connect, type Socket } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { LineGateServer } from './line-gate-server';

const servers: LineGateServer[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const g of servers.splice(0)) await g.stop();
});

/** A gate on a loopback port with one shell (nonce `n1`) whose every line is let through. */
async function gateWithShell(): Promise<{ port: number; asked: string[] }> {
  const gate = new LineGateServer(null);
  servers.push(gate);
  const port = await gate.start();
  const asked: string[] = [];
  gate.register('n1', async (req) => {
    asked.push(req.command);
    return { allow: true, rest: 'line' };
  });
  return { port, asked };
}

/** A connection and everything it has received so far, with a way to wait for more. */
async function open(port: number): Promise<{ socket: Socket; received: () => string; until: (what: string) => Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let text = '';
  const waiters: (() => void)[] = [];
  socket.on('data', (d: Buffer) => {
    text += d.toString('utf8');
    for (const w of waiters.splice(0)) w();
  });
  const until = async (what: string): Promise<void> => {
    while (!text.includes(what)) await new Promise<void>((r) => waiters.push(r));
  };
  return { socket, received: () => text, until };
}

// ask · nonce · seq · pid · line number · kind · keys pending · $PWD · history · command · `history 1`
const question = (seq: number, command: string, history: string): string =>
  ['ask', 'n1', String(seq), '4242', '3', 'line', '0', '/tmp', '1', command, history].map((f) => `${f}\0`).join('');

test('half a question is acknowledged at once with an empty line, so the shell sends the rest without waiting out a delayed ACK', async () => {
  const { port, asked } = await gateWithShell();
  const c = await open(port);
  // bash flushes at each newline of the line's history: the question arrives in pieces.
  const q = question(7, 'true', '   28  true\n');
  const cut = q.indexOf('\n') + 1;
  c.socket.write(q.slice(0, cut));
  await c.until('\n');
  expect(c.received()).toBe('\n');
  expect(asked).toEqual([]);
  c.socket.write(q.slice(cut));
  await c.until('allow');
  await c.until('line\n');
  expect(c.received()).toBe('\nallow 7 line\n');
  expect(asked).toEqual(['true']);
});

test('a whole question in one piece gets only its answer', async () => {
  const { port } = await gateWithShell();
  const c = await open(port);
  c.socket.write(question(8, 'ls', ''));
  await c.until('line\n');
  expect(c.received()).toBe('allow 8 line\n');
});
