import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { castText, recordHead } from './recording-file';
import { freeRecordingBlocks, RecordingWriter } from './recording-writer';

const dir = mkdtempSync(join(tmpdir(), 'ptydeck-cast-unit-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const header = { version: 2 as const, width: 80, height: 24, timestamp: Math.floor(Date.now() / 1000) };
const unlimited = { maxBytes: 1 << 30, reserve: () => true };

/** The recording as a reader gets it: asciicast v2, header line first. */
async function events(path: string): Promise<[number, string, string][]> {
  return (await castText(path)).trimEnd().split('\n').slice(1).map((l) => JSON.parse(l));
}

test('output cut inside a multi-byte character anywhere comes out as whole characters, in order', async () => {
  const text = 'a☃é漢🎉z'.repeat(50);
  const bytes = Buffer.from(text);
  for (let cut = 1; cut < 12; cut++) {
    const path = join(dir, `cut-${cut}.cast`);
    const w = new RecordingWriter(path, header, unlimited, () => undefined);
    for (let i = 0; i < bytes.length; i += cut) {
      w.output(bytes.subarray(i, i + cut), Date.now());
      // An input event between chunks forces the staged output out, mid-character.
      if (i % (cut * 7) === 0) w.input('k', Date.now());
    }
    await w.close();
    const all = await events(path);
    const out = all.filter((e) => e[1] === 'o').map((e) => e[2]).join('');
    expect(out).toBe(text);
    expect(all.every((e) => !e[2].includes('\uFFFD'))).toBe(true);
  }
});

test('event times count from the header, never go back, and each kind is written as asciicast v2 says', async () => {
  const path = join(dir, 'kinds.cast');
  const w = new RecordingWriter(path, header, unlimited, () => undefined);
  const t0 = header.timestamp * 1000 + 1500;
  w.output(Buffer.from('hello'), t0);
  w.resize(100, 30, t0 + 10);
  w.marker('ls -la', t0 + 20);
  w.input('[hidden: 8 bytes]', t0 + 30);
  w.output(Buffer.from(' world'), t0 + 40);
  await w.close();
  expect(await events(path)).toEqual([
    [1.5, 'o', 'hello'],
    [1.51, 'r', '100x30'],
    [1.52, 'm', 'ls -la'],
    [1.53, 'i', '[hidden: 8 bytes]'],
    [1.54, 'o', ' world'],
  ]);
});

test('past its cap a recording stops, says so once in the file, and ignores what follows', async () => {
  const path = join(dir, 'cap.cast');
  const stops: string[] = [];
  const w = new RecordingWriter(path, header, { maxBytes: 400, reserve: () => true }, (why) => stops.push(why));
  for (let i = 0; i < 50; i++) {
    w.output(Buffer.from(`line ${i}\r\n`), Date.now());
    w.marker(`m${i}`, Date.now());
  }
  await w.close();
  expect(stops).toHaveLength(1);
  expect(stops[0]).toMatch(/cap of 400 bytes/);
  const last = (await events(path)).at(-1)!;
  expect(last[1]).toBe('m');
  expect(last[2]).toMatch(/recording stopped/);
});

test('a write that fails (a full disk) is reported once and the writer keeps taking output without throwing', async () => {
  const stops: string[] = [];
  const w = new RecordingWriter('/dev/full', header, unlimited, (why) => stops.push(why));
  for (let i = 0; i < 20; i++) {
    w.output(Buffer.alloc(70000, 0x61), Date.now());
    await new Promise((r) => setTimeout(r, 5));
  }
  await w.flush();
  await w.close();
  expect(stops).toHaveLength(1);
  expect(stops[0]).toMatch(/ENOSPC|no space/i);
  expect(w.stopped).toBe(stops[0]);
});

test('output is kept as printed: the file holds the bytes themselves, and its reader escapes them as JSON does', async () => {
  const path = join(dir, 'raw.ptyrec');
  const w = new RecordingWriter(path, header, unlimited, () => undefined);
  const printed = Buffer.from('quote " back \\ bell \x07 esc \x1b[31mred\x1b[0m \u2603\r\n');
  w.output(printed, Date.now());
  await w.close();
  const file = readFileSync(path);
  expect(file.includes(printed)).toBe(true);
  expect((await events(path)).map((e) => e[2])).toEqual([printed.toString('utf8')]);
});

test('a file cut short (a crash mid-write) reads up to its last whole record; a damaged one reads as an error', async () => {
  const path = join(dir, 'cut.ptyrec');
  const w = new RecordingWriter(path, header, unlimited, () => undefined);
  w.output(Buffer.from('first'), Date.now());
  w.cut();
  w.output(Buffer.from('second'), Date.now());
  await w.close();
  const whole = readFileSync(path);
  writeFileSync(path, whole.subarray(0, whole.length - 3));
  expect((await events(path)).map((e) => e[2])).toEqual(['first']);
  writeFileSync(path, Buffer.concat([whole, recordHead('o', 1, 4).fill(0x7a, 0, 1), Buffer.from('tail')]));
  await expect(castText(path)).rejects.toThrow(/not a ptydeck recording/);
});

test('output is lent for the call only: the caller reuses its buffer at once, the file holds what was printed; written blocks are reused', async () => {
  const path = join(dir, 'lent.ptyrec');
  const w = new RecordingWriter(path, header, unlimited, () => undefined);
  // One buffer filled again for every chunk, as the server's read buffer is.
  const reused = Buffer.alloc(50_000);
  const expected: string[] = [];
  for (let i = 0; i < 60; i++) {
    reused.fill(0x61 + (i % 26));
    const n = 1000 + i * 700;
    w.output(reused.subarray(0, n), Date.now());
    expected.push(String.fromCharCode(0x61 + (i % 26)).repeat(n));
    // Some chunks wait for a write while the buffer changes under them; some are written first.
    if (i % 10 === 9) await w.flush();
  }
  reused.fill(0x2a); // what only a kept reference would see
  const before = freeRecordingBlocks();
  await w.close();
  expect((await events(path)).filter((e) => e[1] === 'o').map((e) => e[2]).join('')).toBe(expected.join(''));
  // About 1.3 MiB went through 64 KiB blocks: the written ones wait in the pool for the next recording.
  expect(freeRecordingBlocks()).toBeGreaterThan(before);
  const path2 = join(dir, 'lent-2.ptyrec');
  const w2 = new RecordingWriter(path2, header, unlimited, () => undefined);
  w2.output(Buffer.from('next'), Date.now());
  await w2.close();
  expect((await events(path2)).map((e) => e[2])).toEqual(['next']);
});
