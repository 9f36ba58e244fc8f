import { afterEach, describe, expect, test, vi } from 'vitest';
import { CommandFollower } from './command-follower';
import type { CommandRecord } from './commands';
import { LogCursor } from './output-hub';
import { OutputLog } from './output-log';

/**
 * Spilled output that cannot be read back (a disk error on the spill file) is lost, as an eviction
 * loses it: the log begins after it and readers see a gap. Before, the read threw out of whichever
 * reader asked, and the session was left half way (in the server, on some paths, the process ended).
 * The failure is made by failing the next `readSync`s; everything else is the real file.
 */
const failing = vi.hoisted(() => ({ reads: 0 }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const readSync = (...args: Parameters<typeof fs.readSync>): number => {
    if (failing.reads > 0) {
      failing.reads--;
      throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
    }
    return fs.readSync(...args);
  };
  return { ...fs, default: { ...fs, readSync }, readSync };
});

/** `n` bytes from log offset `from`, each saying where it is, so any range read back can be checked. */
const pattern = (from: number, n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => ((from + i) * 7 + ((from + i) >>> 11)) & 255));

/** A log of 4 MB whose older ~3 MB are spilled to disk. */
async function spilledLog(): Promise<{ log: OutputLog; all: Buffer }> {
  const log = new OutputLog(8 * 1024 * 1024);
  for (let i = 0; i < 40; i++) log.append(pattern(i * 100_000, 100_000));
  expect(log.spillCold(1024 * 1024, Infinity)).toBeGreaterThan(2 * 1024 * 1024);
  await log.spillsLanded();
  return { log, all: pattern(0, 4_000_000) };
}

describe('OutputLog: spilled output that cannot be read back', () => {
  afterEach(() => {
    failing.reads = 0;
    vi.restoreAllMocks();
  });

  test('is lost up to the end of its segment: the log begins after it, and reads of the rest are exact', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { log, all } = await spilledLog();
    failing.reads = 1;
    const bytes = log.read(0);
    expect(log.start).toBeGreaterThan(0);
    expect(log.end).toBe(4_000_000);
    // What it gives ends where asked and begins where the log now begins.
    expect(bytes.length).toBe(log.end - log.start);
    expect(bytes.equals(all.subarray(log.start))).toBe(true);
    expect(errors).toHaveBeenCalledTimes(1);
    expect(String(errors.mock.calls[0][0])).toMatch(/could not be read back \(EIO/);
    // The other spilled segments still read back, by every reader.
    expect(log.read(1_234_567, 2_345_678).equals(all.subarray(1_234_567, 2_345_678))).toBe(true);
    const c = log.chunkAt(log.start, 64 * 1024)!;
    expect(c.data.equals(all.subarray(log.start, log.start + c.data.length))).toBe(true);
    // Appending and evicting go on as before.
    log.append(pattern(4_000_000, 10));
    expect(log.read(log.end - 10).equals(pattern(4_000_000, 10))).toBe(true);
  });

  test('a read that fails in the middle of a range gives the rest of it; lineStartBefore and chunkAt answer after the loss', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { log, all } = await spilledLog();
    // A range over several spilled segments: the first read back works, the second fails.
    const readsBefore = log.read(0, 1).length;
    expect(readsBefore).toBe(1);
    failing.reads = 1;
    const bytes = log.read(0, 2_000_000);
    const begins = 2_000_000 - bytes.length;
    expect(begins).toBe(log.start);
    expect(begins).toBeGreaterThan(1);
    expect(bytes.equals(all.subarray(begins, 2_000_000))).toBe(true);

    failing.reads = 1;
    const oldStart = log.start;
    expect(log.chunkAt(oldStart, 1024)).toBeNull();
    expect(log.start).toBeGreaterThan(oldStart);

    // lineStartBefore counts back from the end: the lines it needs reach into spilled segments, and the
    // newest of those fails. Its answer is then the one the bytes still held give.
    const newlines = (from: number): number => all.subarray(from, log.end).filter((b) => b === 0x0a).length;
    const lineStart = (lines: number, lowest: number): number | null => {
      let left = lines;
      for (let i = log.end - 1; i >= lowest; i--) if (all[i] === 0x0a && --left === 0) return i + 1;
      return null;
    };
    const before = log.start;
    const lines = newlines(before + 1000);
    failing.reads = 1;
    expect(log.lineStartBefore(log.end, lines, 0)).toBe(lineStart(lines, log.start));
    expect(log.start).toBeGreaterThan(before);
    const fewer = newlines(log.start + 1000);
    expect(fewer).toBeGreaterThan(0);
    expect(log.lineStartBefore(log.end, fewer, 0)).toBe(lineStart(fewer, log.start));
  });

  test('a cursor from before the loss gets the gap, then every byte after it once, at its offset', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { log, all } = await spilledLog();
    failing.reads = 1;
    const gaps: [number, number][] = [];
    const got: Buffer[] = [];
    let next = -1;
    const cursor = new LogCursor({
      log,
      from: 0,
      wholeCharacters: false,
      send: (payload, _channel, at, flushed) => {
        if (next >= 0) expect(at).toBe(next);
        got.push(Buffer.from(payload));
        next = at + payload.length;
        flushed();
      },
      onGap: (lostFrom, resumeAt) => {
        gaps.push([lostFrom, resumeAt]);
        next = resumeAt;
        return true;
      },
    });
    cursor.pump();
    expect(gaps).toEqual([[0, log.start]]);
    expect(Buffer.concat(got).equals(all.subarray(log.start))).toBe(true);
    expect(cursor.offset).toBe(log.end);
  });

  test("a command's followed output counts the bytes lost while it was being read", async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const log = new OutputLog(8 * 1024 * 1024);
    const line = Buffer.from(`${'x'.repeat(99)}\n`);
    for (let i = 0; i < 40_000; i++) log.append(line);
    log.spillCold(1024 * 1024, Infinity);
    await log.spillsLanded();
    const record = { outputStart: 0, outputEnd: log.end } as unknown as CommandRecord;
    const follower = new CommandFollower(log, record);
    failing.reads = 1;
    let text = '';
    let lost = 0;
    for (let piece = follower.take(); piece; piece = follower.take()) {
      text += piece.text;
      lost += piece.lost;
      if (text.length + lost >= log.end) break;
    }
    expect(lost).toBe(log.start);
    expect(lost).toBeGreaterThan(0);
    // Every line after the loss, once: the first is whatever is left of the line the loss cut.
    expect(text.length + lost).toBe(log.end);
  });
});
