import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, sleep, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * A client that stops reading must not grow the server's memory, stall the shell, or slow the others:
 * `yes` floods a session while one socket never reads, another reads normally, and a second session
 * keeps running commands.
 */
let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
});
afterAll(async () => {
  await srv.close();
});

test('a stalled reader: memory stays bounded, the shell runs on, the other clients and sessions go on', async () => {
  const auth = { Authorization: `Bearer ${srv.token}` };
  const flood = (await srv.api('POST', '/v2/pty/sessions', { id: 'flood', cwd: '/tmp' })).body.data.session_id;
  const other = (await srv.api('POST', '/v2/pty/sessions', { id: 'other', cwd: '/tmp' })).body.data.session_id;
  const session = srv.app.manager.get(flood)!;

  const stalled = await WsClient.open(`${srv.wsUrl}/v2/pty/sessions/${flood}/ws?protocol=binary`, auth);
  await stalled.nextJson('ready');
  stalled.ws.pause(); // never reads again
  const execd = (await srv.api('POST', '/pty', { cwd: '/tmp' })).body.session_id as string;
  void execd;

  // Live bytes (heap plus buffers) after a forced collection: what the server holds, not garbage it has
  // yet to collect. Bounded fan-out holds the log and one socket's watermark; a queue would hold it all.
  // (Collected twice with a pause between: V8 frees array buffers' memory on a background sweeper.)
  const live = async (): Promise<number> => {
    if (!global.gc) throw new Error('run vitest with --expose-gc (vitest.config.mts sets it)');
    global.gc();
    await sleep(100);
    global.gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const baseline = await live();
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  const rssBaseline = process.memoryUsage().rss;

  const startEnd = session.log.end;
  await srv.api('POST', `/v2/pty/sessions/${flood}/exec`, { command: 'yes ptydeck-flood-line', async: true });
  const answers: string[] = [];
  for (let i = 0; i < 8; i++) {
    const r = await srv.api('POST', `/v2/pty/sessions/${other}/exec`, { command: `echo other-${i}` });
    answers.push(r.body.data.output);
    await sleep(400);
  }
  // Keep flooding until the shell has produced several times what any buffer of ours may hold.
  const logBytes = srv.app.manager.config.logBytes;
  await until(() => session.log.end - startEnd > 4 * logBytes, 30000, 100);
  // Live growth after four logs, eight and twelve: bounded buffers stay about where they were (frames in
  // flight to and from the PTY host make single samples noisy); a queue grows by four logs each time.
  const growth: number[] = [(await live()) - baseline];
  for (let i = 0; i < 2; i++) {
    const from = session.log.end;
    await until(() => session.log.end - from > 4 * logBytes, 30000, 100);
    growth.push((await live()) - baseline);
  }
  const produced = session.log.end - startEnd;
  await srv.api('POST', `/v2/pty/sessions/${flood}/input`, { input: '\u0003' });
  clearInterval(sampler);

  expect(answers).toEqual(Array.from({ length: 8 }, (_, i) => `other-${i}`));
  // The shell was never held back by the stalled socket: it produced far more than any buffer holds.
  expect(produced).toBeGreaterThan(12 * logBytes);
  const MiB = (n: number) => Number((n / 1024 / 1024).toFixed(1));
  // What the server keeps alive is the log (bounded), one socket watermark, the recording's queue (4 MiB)
  // and small change; a queue for the stalled socket would hold everything produced (more than four logs
  // at the first sample)...
  expect(MiB(Math.min(...growth)), `growth ${growth.map(MiB)} MiB`).toBeLessThan(MiB(logBytes + 24 * 1024 * 1024));
  // ...and would have grown by eight more logs by the last; bounded buffers stay about where they were.
  expect(MiB(Math.min(growth[1], growth[2]) - growth[0]), `growth ${growth.map(MiB)} MiB`).toBeLessThan(MiB(2 * logBytes));
  expect(session.log.retainedBytes).toBeLessThanOrEqual(logBytes + 256 * 1024);
  // And the process as a whole stayed within a generous bound, garbage included.
  expect((peakRss - rssBaseline) / 1024 / 1024).toBeLessThan(150);
  stalled.ws.terminate();
}, 60000);

test('after a stall, a binary execd client resumes with a replay frame whose offset shows the gap', async () => {
  const small = await startTestServer({ PTYDECK_LOG_BYTES: String(256 * 1024) });
  try {
    const id = (await small.api('POST', '/pty', { cwd: '/tmp' })).body.session_id;
    const c = await WsClient.open(`${small.wsUrl}/pty/${id}/ws`, { Authorization: `Bearer ${small.token}` });
    await c.nextJson('connected');
    c.ws.pause();
    c.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from("python3 -c \"import sys; sys.stdout.write('q' * 30000000)\"\n")]));
    const s = small.app.manager.get(id)!;
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (s.log.end > 30_000_000) {
          clearInterval(t);
          resolve();
        }
      }, 50);
    });
    // (With a log this small, a burst may outrun a reader even before it stalls, and that earlier replay
    // frame waits in the socket buffer: the one that matters shows the stall's gap, megabytes on.)
    c.ws.resume();
    const offsetOf = (f: { binary?: Buffer }) => Number(f.binary!.readBigUInt64BE(1));
    const gapFrame = await c.next((f) => Boolean(f.binary && f.binary[0] === 0x03 && offsetOf(f) > 1_000_000), 20000);
    expect(offsetOf(gapFrame)).toBeGreaterThan(1_000_000);
    // Every replay frame moves forward: a client can always tell where its bytes resume.
    const replays = c.frames.filter((f) => f.binary && f.binary[0] === 0x03).map(offsetOf);
    expect([...replays].sort((a, b) => a - b)).toEqual(replays);
    c.ws.terminate();
  } finally {
    await small.close();
  }
}, 60000);
