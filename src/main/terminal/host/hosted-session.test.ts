import { afterEach, expect, test } from 'vitest';
import type { ProcessExit } from '../backends/backend';
import { NodePtyBackend } from '../backends/node-pty-backend';
import { readStat } from '../processes';
import { HostedSession, type OutputSink } from './hosted-session';

/**
 * A host session with no server attached (the server died, or restarts): it reads only while its log
 * has room, so the server that comes back finds every byte from where the log stood, and a program
 * that ended meanwhile keeps the output still waiting in the terminal.
 */
const KiB = 1024;
const sessions: HostedSession[] = [];
afterEach(() => {
  for (const s of sessions.splice(0)) s.end();
});

function start(cap: number, script: string): HostedSession {
  const proc = new NodePtyBackend().spawn({ file: '/bin/sh', args: ['-c', script], cwd: '/tmp', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'dumb' }, cols: 80, rows: 24 });
  const s = new HostedSession('t', proc, cap, null, null);
  sessions.push(s);
  return s;
}

/** A server that takes everything at once and checks that offsets follow on. */
function collect(s: HostedSession): { sink: OutputSink; bytes: () => Buffer; exit: () => ProcessExit | null } {
  const got: Buffer[] = [];
  let next = 0;
  let exit: ProcessExit | null = null;
  const sink: OutputSink = {
    output(_h, offset, payload, flushed) {
      expect(offset).toBe(next);
      next += payload.length;
      got.push(Buffer.from(payload));
      setImmediate(flushed);
    },
    exit: (_h, e) => (exit = e),
    synced: () => undefined,
  };
  s.attach(sink, 1, 0);
  return { sink, bytes: () => Buffer.concat(got), exit: () => exit };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function until(fn: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!fn() && Date.now() < deadline) await sleep(10);
  return fn();
}

test('with no server attached the log drops nothing: the program waits once the log is full, and the next server gets every byte', async () => {
  const cap = 64 * KiB;
  const total = 16 * cap;
  const s = start(cap, `head -c ${total} /dev/zero | tr '\\0' x`);
  await until(() => s.log.end >= cap, 10000);
  await sleep(300);
  // Held: the log kept its first byte and stopped about where it filled up.
  expect(s.log.start).toBe(0);
  expect(s.log.end).toBeLessThan(2 * cap);
  expect(s.exit).toBeNull();

  const server = collect(s);
  expect(await until(() => server.exit() !== null, 20000)).toBe(true);
  expect(server.bytes().equals(Buffer.alloc(total, 'x'))).toBe(true);
  expect(server.exit()).toEqual({ exitCode: 0, signal: null });
});

test('a program that ends while the host holds its output keeps the bytes still in the terminal, and its exit comes after them', async () => {
  const cap = 64 * KiB;
  // A little more than the log takes: the rest fits in the terminal's buffer, so the program ends.
  const total = cap + 8 * KiB;
  const s = start(cap, `head -c ${total} /dev/zero | tr '\\0' y`);
  await until(() => s.log.end >= cap, 10000);
  expect(await until(() => readStat(s.pid) === null, 10000)).toBe(true);
  // Longer than node-pty waits (200 ms) before it lets a dead program's terminal go.
  await sleep(1000);
  expect(s.log.end).toBeLessThan(total);
  expect(s.exit).toBeNull();

  const server = collect(s);
  expect(await until(() => server.exit() !== null, 20000)).toBe(true);
  expect(server.bytes().length).toBe(total);
  expect(server.bytes().equals(Buffer.alloc(total, 'y'))).toBe(true);
});

test('with a server attached, no byte from its KEEP mark on is evicted: the program waits once the log is full of them, and reads on as the mark moves', async () => {
  const cap = 64 * KiB;
  const total = 16 * cap;
  const s = start(cap, `head -c ${total} /dev/zero | tr '\\0' z`);
  // The server takes every byte at once, but its clients have none of them safe yet.
  const server = collect(s);
  s.keep(server.sink, 0);
  await until(() => s.log.end >= cap, 10000);
  await sleep(300);
  expect(s.log.start).toBe(0);
  expect(s.log.end).toBeLessThan(2 * cap);
  expect(s.exit).toBeNull();
  // A KEEP from a server no longer attached changes nothing.
  s.keep({ ...server.sink }, Number.MAX_SAFE_INTEGER);
  await sleep(200);
  expect(s.log.end).toBeLessThan(2 * cap);
  // Its clients got half: the terminal reads on until the log is full from there.
  const mark = Math.floor(s.log.end / 2);
  s.keep(server.sink, mark);
  await until(() => s.log.end - mark >= cap, 10000);
  await sleep(300);
  expect(s.log.start).toBeLessThanOrEqual(mark);
  expect(s.log.end - mark).toBeLessThan(2 * cap);
  expect(s.exit).toBeNull();
  // Then everything is safe: it runs to the end.
  s.keep(server.sink, Number.MAX_SAFE_INTEGER);
  expect(await until(() => server.exit() !== null, 20000)).toBe(true);
  expect(server.bytes().equals(Buffer.alloc(total, 'z'))).toBe(true);
});
