import { expect, test } from 'vitest';
import { OutputLog } from '../output-log';
import { Stream, StreamIndex } from './stream-index';

/** Appends like the command host does: the index learns the offset, then the log gets the bytes. */
function append(log: OutputLog, index: StreamIndex, channel: 1 | 2 | 3, text: string): void {
  const data = Buffer.from(text);
  if (channel !== 3) index.note(channel, log.end, data.length);
  log.append(data, channel);
}

test('stdout and stderr keep offsets of their own over one interleaved log', () => {
  const log = new OutputLog(1024 * 1024);
  const index = new StreamIndex(log);
  append(log, index, 3, '$ cmd\n');
  append(log, index, 1, 'out1 ');
  append(log, index, 2, 'err1 ');
  append(log, index, 1, 'out2');
  append(log, index, 2, 'err2');
  append(log, index, 1, '!');
  expect(index.end(Stream.Stdout)).toBe(10);
  expect(index.end(Stream.Stderr)).toBe(9);
  expect(index.read(Stream.Stdout, 0).data.toString()).toBe('out1 out2!');
  expect(index.read(Stream.Stderr, 0).data.toString()).toBe('err1 err2');
  expect(index.read(Stream.Stdout, 3, 7).data.toString()).toBe('1 ou');
  expect(index.read(Stream.Stderr, 9)).toEqual({ data: Buffer.alloc(0), from: 9 });
  expect(index.read(Stream.Stderr, 50).from).toBe(9);
});

test('once the log drops old bytes, a stale offset reads from the oldest byte kept', () => {
  const log = new OutputLog(64 * 1024);
  const index = new StreamIndex(log);
  const chunk = 'x'.repeat(1000) + '\n';
  for (let i = 0; i < 200; i++) {
    append(log, index, 1, chunk);
    append(log, index, 2, 'e');
  }
  expect(log.start).toBeGreaterThan(0);
  const start = index.start(Stream.Stdout);
  expect(start).toBeGreaterThan(0);
  const r = index.read(Stream.Stdout, 0);
  expect(r.from).toBe(start);
  expect(r.data.length).toBe(index.end(Stream.Stdout) - start);
  expect(r.data.toString().replace(/[x\n]/g, '')).toBe('');
  expect(index.read(Stream.Stderr, 0).data.toString()).toMatch(/^e+$/);
});
