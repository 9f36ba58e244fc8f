import { expect, test, vi } from 'vitest';
import { OutputLog } from './output-log';
import { ScreenMirror } from './screen';

/** A log that counts the bytes read back from it: what a screen parses, it reads first. */
class CountingLog extends OutputLog {
  readBytes = 0;
  override read(from: number, to?: number): Buffer {
    const bytes = super.read(from, to);
    this.readBytes += bytes.length;
    return bytes;
  }
}

test('a screen rebuilt after a flood of short lines parses only the lines it can hold, and shows what parsing all of them shows', async () => {
  const log = new CountingLog(256 * 1024);
  const scrollback = 1000;
  // The reference parses the flood as it comes (it is never behind far enough to rebuild).
  const followed = new ScreenMirror(log, 80, 24, scrollback);
  // This one looks only at the end, when the log has dropped bytes it never parsed: it must rebuild.
  const late = new ScreenMirror(log, 80, 24, scrollback);
  let n = 0;
  for (let round = 0; round < 12; round++) {
    let text = '';
    while (text.length < 64 * 1024) text += `line ${++n}${n % 7 === 0 ? ' \x1b[32mok\x1b[0m' : ''}\r\n`;
    log.append(Buffer.from(text));
    await followed.catchUp();
  }
  log.append(Buffer.from('prompt$ '));
  await followed.catchUp();
  expect(log.start).toBeGreaterThan(0);
  log.readBytes = 0;
  const rebuilt = await late.snapshot(scrollback);
  // ~1,024 lines of ~10 bytes, not the whole 256 KiB the log holds.
  expect(log.readBytes).toBeLessThan(24 * 1024);
  expect(rebuilt.rebuilt).toBe(true);
  const reference = await followed.snapshot(scrollback);
  expect(rebuilt.data).toBe(reference.data);
  expect(rebuilt.data).toContain(`line ${n}\r\nprompt$ `);
  // The oldest line the scrollback keeps is there too: the rebuild started early enough.
  expect(rebuilt.data).toMatch(new RegExp(`line ${n - scrollback}[ \\r]`));
  late.dispose();
  followed.dispose();
});

test('a catch-up that a flood outruns (the log drops bytes it has yet to parse) skips them and ends where it set out to', async () => {
  const log = new OutputLog(256 * 1024);
  const screen = new ScreenMirror(log, 80, 24, 100);
  let n = 0;
  const more = (bytes: number): void => {
    let text = '';
    while (text.length < bytes) text += `line ${++n}\r\n`;
    log.append(Buffer.from(text));
  };
  more(200 * 1024);
  const target = log.end;
  // Between the catch-up's steps the flood goes on, a whole log's worth a turn: past everything it set out to parse.
  let flooding = true;
  const flood = (): void => {
    if (!flooding) return;
    more(512 * 1024);
    setImmediate(flood);
  };
  setImmediate(flood);
  const stuck = new Promise<null>((resolve) => setTimeout(() => resolve(null), 20_000).unref());
  const snap = await Promise.race([screen.snapshot(0), stuck]);
  flooding = false;
  expect(snap, 'the catch-up never ended').not.toBeNull();
  expect(log.start).toBeGreaterThan(target);
  expect(snap!.offset).toBeGreaterThanOrEqual(target);
  // The screen then follows on from where that catch-up stopped.
  more(1024);
  log.append(Buffer.from('the end\r\n'));
  expect((await screen.snapshot(0)).data).toContain('the end');
  screen.dispose();
}, 30_000);

/** `n` short lines, each with a cursor-position query in it when `queries` says so. */
const manyLines = (n: number, queries = false): string => Array.from({ length: n }, (_, i) => `line ${i}${queries ? '\x1b[6n' : ''}\r\n`).join('');

/** A screen whose answers to terminal queries are kept in `answers`. */
function answeringScreen(): { log: OutputLog; screen: ScreenMirror; answers: string[] } {
  const log = new OutputLog(8 * 1024 * 1024);
  const answers: string[] = [];
  const screen = new ScreenMirror(log, 80, 24, 100, { write: (r) => answers.push(r), draining: () => true });
  return { log, screen, answers };
}

test('after a rebuild, a query the program asks later is answered (only the queries the rebuild skipped over go unanswered)', async () => {
  const { log, screen, answers } = answeringScreen();
  // More than a catch-up parses before it rebuilds from the tail instead; a query in the middle of it
  // belongs to the past the rebuild skips.
  log.append(Buffer.from(manyLines(300_000) + '\x1b[6n' + manyLines(300_000)));
  await screen.catchUp();
  expect(answers).toEqual([]);
  // Now the program asks where the cursor is, and waits for the answer (nobody takes a snapshot).
  log.append(Buffer.from('\x1b[6n'));
  await screen.catchUp();
  expect(answers).toEqual(['\x1b[24;1R']);
  screen.dispose();
});

test('a rebuild answers the newest query when it came moments ago (a program printed much, then asked), and none of the older ones', async () => {
  const { log, screen, answers } = answeringScreen();
  // Queries all through the tail the rebuild replays; the program that asked them has long gone.
  log.append(Buffer.from(manyLines(600_000, true)));
  const asked = log.end;
  log.append(Buffer.from('\x1b[6n'));
  screen.noteQuery(asked);
  await screen.catchUp();
  expect(answers).toEqual(['\x1b[24;1R']);
  screen.dispose();
});

test('a rebuild does not answer even the newest query when it was asked long ago', async () => {
  const { log, screen, answers } = answeringScreen();
  log.append(Buffer.from(manyLines(600_000)));
  const asked = log.end;
  log.append(Buffer.from('\x1b[6n'));
  screen.noteQuery(asked);
  const now = Date.now();
  const clock = vi.spyOn(Date, 'now').mockReturnValue(now + 5000);
  try {
    await screen.catchUp();
  } finally {
    clock.mockRestore();
  }
  expect(answers).toEqual([]);
  screen.dispose();
});
