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
});
