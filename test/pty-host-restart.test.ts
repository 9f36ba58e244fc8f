import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, expect, test } from 'vitest';
import { endHost, sleep, until } from './helpers';
import { ResumingClient } from './resuming-client';
import { endHome, spawnServer, type ServerProcess } from './server-process';

/**
 * A server on the PTY host killed with SIGKILL while a session prints many times its log's capacity.
 * With no server attached, the host must not read the rest of the flood into its bounded log (which
 * would drop the bytes the client had not reached yet), and the restarted server must not read it on
 * before the client is back: then a client that resumes from its offset receives every byte of the
 * stream exactly once. (Before either, it lost most of the flood; with only the first, a few hundred
 * KiB now and then.)
 */
const MiB = 1024 * 1024;
/**
 * A small log, so the flood is many times it. A client may trail the host's reading point by more than
 * the log holds (the server holds the host back at a quarter, the host pauses at half, and the sockets
 * between them buffer more); the host keeps what the server's clients have not got safe (KEEP), so none
 * of it is lost however small the log.
 */
const LogBytes = 1 * MiB;
const env = { AIO_SHELL_BACKEND: 'host', PTYDECK_LOG_BYTES: String(LogBytes) };
const home = mkdtempSync(join(tmpdir(), 'ptydeck-host-flood-'));
let server: ServerProcess | null = null;

afterAll(async () => {
  await server?.stop('SIGKILL');
  await endHost(home);
  endHome(home);
});

/** About `bytes` of numbered lines between two markers; the client sees them with ONLCR's `\r\n`. */
function payload(bytes: number): { path: string; begin: Buffer; end: Buffer; expected: Buffer } {
  const nonce = randomBytes(6).toString('hex');
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line = `${i} ${'abcdefghijklmnopqrstuvwxyz'.repeat(1 + (i % 7))} ${i * 7919}`;
    lines.push(line);
    size += line.length + 1;
  }
  const path = join(home, 'flood.txt');
  writeFileSync(path, `BEGIN-${nonce}\n${lines.join('\n')}\nEND-${nonce}\n`);
  return { path, begin: Buffer.from(`BEGIN-${nonce}\r\n`), end: Buffer.from(`END-${nonce}`), expected: Buffer.from(`${lines.join('\r\n')}\r\n`) };
}

test('a client resuming after the server was killed mid-flood gets every byte once, though the flood is many times the log', async () => {
  // Loopback TCP buffers take several MiB the client has not read: the flood must outlast them too.
  const flood = payload(12 * LogBytes);
  server = await spawnServer(home, env);
  const admin = (t: string) => ({ Authorization: `Bearer ${t}`, 'Content-Type': 'application/json' });
  const agent = (await (await fetch(`${server.url}/api/tokens`, { method: 'POST', headers: admin(server.token), body: '{"name":"flooder"}' })).json()).token as string;
  const created = await (await fetch(`${server.url}/pty`, { method: 'POST', headers: { 'X-EXECD-ACCESS-TOKEN': agent, 'Content-Type': 'application/json' }, body: '{"cwd":"/tmp"}' })).json();
  const id = created.session_id as string;

  const client = new ResumingClient();
  await client.connect(server.url, agent, id);
  await client.ws.nextJson('connected');
  client.ws.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(`cat '${flood.path}'\n`)]));
  await until(() => client.offset > LogBytes, 30000, 5);

  // The client stops reading, so the server holds the flood back for it: the kill lands mid-stream
  // however fast this machine is.
  client.ws.ws.pause();
  await sleep(300);
  await server.stop('SIGKILL');
  server = null;
  // What the dead server had already sent is the client's; it resumes after it.
  client.ws.ws.resume();
  await until(() => client.ws.closed !== null, 10000, 10);
  const resumeAt = client.offset;
  // Still mid-flood, with several logs' worth to come.
  expect(flood.expected.length - resumeAt).toBeGreaterThan(4 * LogBytes);
  // Time for a host that reads on without a server to run through the rest of the flood.
  await sleep(1500);

  server = await spawnServer(home, env);
  await client.connect(server.url, agent, id);
  const all = (): Buffer => Buffer.concat(client.bytes);
  // The prompt after END ends with the shell's B marker: then nothing more comes.
  const finished = (): boolean => {
    const bytes = Buffer.concat(client.bytes.slice(-16));
    const end = bytes.lastIndexOf(flood.end);
    return end >= 0 && bytes.indexOf('\x1b]633;B;', end) >= 0;
  };
  expect(await until(finished, 60000, 100)).toBe(true);
  const logEnd = async () => (await (await fetch(`${server!.url}/pty/${id}`, { headers: { 'X-EXECD-ACCESS-TOKEN': agent } })).json()).output_offset as number;
  // (A client told of a gap counts its offset on from where it was: it can never reach the end.)
  const reachedEnd = await until(async () => client.gaps.length > 0 || client.offset === (await logEnd()), 20000, 50);
  client.ws.close();
  expect(client.gaps).toEqual([]);
  expect(reachedEnd).toBe(true);
  const bytes = all();
  const begin = bytes.indexOf(flood.begin);
  expect(begin).toBeGreaterThanOrEqual(0);
  expect(begin).toBeLessThan(resumeAt);
  const body = bytes.subarray(begin + flood.begin.length, bytes.indexOf(flood.end, begin));
  expect(body.length).toBe(flood.expected.length);
  expect(crc32(body)).toBe(crc32(flood.expected));

  expect((await fetch(`${server.url}/pty/${id}`, { method: 'DELETE', headers: { 'X-EXECD-ACCESS-TOKEN': agent } })).status).toBe(200);
  await server.close();
  server = null;
}, 150_000);
