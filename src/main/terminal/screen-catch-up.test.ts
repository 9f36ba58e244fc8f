import { expect, test } from 'vitest';
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

test('a catch-up someone waits for parses a flood of short lines in steps, and other work runs between them', async () => {
  const log = new OutputLog(4 * 1024 * 1024);
  const screen = new ScreenMirror(log, 80, 24, 1000);
  // 200,000 lines (~1.3 MiB): below the size that rebuilds, so all of it is parsed.
  let text = '';
  for (let i = 1; i <= 200_000; i++) text += `y ${i}\r\n`;
  log.append(Buffer.from(text));
  let turns = 0;
  let ticking = true;
  // How far the screen got between two turns of the loop: what one step parsed while nothing else ran.
  let lastLag = screen.lag;
  let largestStep = 0;
  const tick = (): void => {
    turns++;
    largestStep = Math.max(largestStep, lastLag - screen.lag);
    lastLag = screen.lag;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const snap = await screen.snapshot(0);
  ticking = false;
  expect(snap.offset).toBe(log.end);
  expect(snap.data).toContain('y 200000');
  // Steps of at most 2,000 lines (of 8-10 bytes here): ~100 of them, each followed by a turn of the loop.
  expect(turns).toBeGreaterThanOrEqual(90);
  expect(largestStep).toBeGreaterThan(0);
  expect(largestStep).toBeLessThanOrEqual(2000 * 10);
  screen.dispose();
});
