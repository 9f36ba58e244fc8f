import { describe, expect, test } from 'vitest';
import { OutputLog } from './output-log';

describe('OutputLog', () => {
  test('addresses bytes by absolute offset and reads any range back', () => {
    const log = new OutputLog(1024 * 1024);
    log.append(Buffer.from('hello '));
    log.append(Buffer.from('world'));
    expect(log.start).toBe(0);
    expect(log.end).toBe(11);
    expect(log.read(0).toString()).toBe('hello world');
    expect(log.read(6, 9).toString()).toBe('wor');
    expect(log.indexOf(Buffer.from('wor'), 0)).toBe(6);
  });

  test('stays bounded and drops whole segments from the front', () => {
    const cap = 64 * 1024;
    const log = new OutputLog(cap);
    const chunk = Buffer.alloc(10000);
    let total = 0;
    for (let i = 0; i < 100; i++) {
      chunk.fill(i % 256);
      log.append(chunk);
      total += chunk.length;
      expect(log.retainedBytes).toBeLessThanOrEqual(cap + 256 * 1024);
    }
    expect(log.end).toBe(total);
    expect(log.start).toBeGreaterThan(0);
    expect(log.retainedBytes).toBeGreaterThanOrEqual(cap);
    // The newest bytes are exactly what was appended last.
    expect(log.read(log.end - 10000).equals(Buffer.alloc(10000, 99))).toBe(true);
    expect(log.read(0, 10).length).toBe(0); // long gone: clamped to what is held
  });

  test('chunkAt never copies and stops at segment and channel boundaries', () => {
    const log = new OutputLog(1024 * 1024);
    log.append(Buffer.from('out1'), 1);
    log.append(Buffer.from('err'), 2);
    log.append(Buffer.from('out2'), 1);
    expect(log.chunkAt(0, 100)).toMatchObject({ channel: 1 });
    expect(log.chunkAt(0, 100)!.data.toString()).toBe('out1');
    expect(log.chunkAt(4, 100)!.data.toString()).toBe('err');
    expect(log.chunkAt(4, 100)!.channel).toBe(2);
    expect(log.chunkAt(7, 100)!.data.toString()).toBe('out2');
    expect(log.chunkAt(11, 100)).toBeNull();
  });

  test('cold segments spilled to disk keep their offsets and read back the same; memory holds the hot tail', () => {
    const log = new OutputLog(8 * 1024 * 1024);
    const chunks: Buffer[] = [];
    for (let i = 0; i < 40; i++) {
      const c = Buffer.alloc(100_000, 97 + (i % 26));
      chunks.push(c);
      log.append(c);
    }
    const all = Buffer.concat(chunks);
    const before = log.residentBytes;
    const freed = log.spillCold(1024 * 1024, Infinity);
    expect(freed).toBeGreaterThan(2 * 1024 * 1024);
    expect(log.residentBytes).toBe(before - freed);
    expect(log.residentBytes).toBeLessThan(1024 * 1024 + 2 * 256 * 1024);
    expect(log.read(0).equals(all)).toBe(true);
    expect(log.read(123_456, 2_345_678).equals(all.subarray(123_456, 2_345_678))).toBe(true);
    // A cursor walks it chunk by chunk across spilled and resident segments alike.
    const walked: Buffer[] = [];
    for (let at = log.start; at < log.end; ) {
      const c = log.chunkAt(at, 64 * 1024)!;
      walked.push(Buffer.from(c.data));
      at += c.data.length;
    }
    expect(Buffer.concat(walked).equals(all)).toBe(true);
    // Appending goes on; eviction drops spilled segments like any other.
    for (let i = 0; i < 100; i++) log.append(Buffer.alloc(100_000, 65));
    expect(log.read(log.end - 10).toString()).toBe('AAAAAAAAAA');
  });

  test('a session that streams on while its cold segments keep going to disk: the spill file stays within the log capacity, every byte held reads back', () => {
    const cap = 1024 * 1024;
    const log = new OutputLog(cap);
    // Each byte says where it is, so any range read back can be checked.
    const at = (offset: number): number => (offset * 7 + (offset >>> 11)) & 255;
    const chunk = (from: number, n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => at(from + i)));
    let largest = 0;
    for (let i = 0; i < 400; i++) {
      log.append(chunk(log.end, 50_000 + (i % 7) * 1000));
      log.spillCold(64 * 1024, Infinity);
      largest = Math.max(largest, log.spillFileBytes);
    }
    // Appended, the file would hold everything ever spilled: ~20 MiB.
    expect(log.end).toBeGreaterThan(20 * cap);
    expect(largest).toBeGreaterThan(cap / 2);
    expect(largest).toBeLessThanOrEqual(cap + 2 * 256 * 1024);
    expect(log.read(log.start).equals(chunk(log.start, log.end - log.start))).toBe(true);
    expect(log.read(log.start + 1234, log.start + 345_678).equals(chunk(log.start + 1234, 345_678 - 1234))).toBe(true);
  });
});
