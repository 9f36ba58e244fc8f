import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { outputJsonFrame } from './json-frame';

/** The frame built from bytes is byte for byte what JSON.stringify of the decoded text gives. */
const reference = (b: Buffer): string => JSON.stringify({ type: 'output', data: b.toString('utf8') });

test('every byte from 0 to 127, terminal text, multi-byte UTF-8: identical to JSON.stringify', () => {
  const ascii = Buffer.from(Array.from({ length: 128 }, (_, i) => i));
  const text = Buffer.from('\x1b[1;31mred\x1b[0m "quoted" back\\slash\r\n€ 日本 🙂 \u2028\t\b\f\x7f', 'utf8');
  for (const b of [ascii, text, Buffer.alloc(0), Buffer.concat([text, ascii, text])]) expect(outputJsonFrame(b).frame.toString('utf8')).toBe(reference(b));
});

test('random bytes (mostly not UTF-8) fall back to the decoded form and still parse', () => {
  for (let i = 0; i < 200; i++) {
    const b = randomBytes(1 + (i % 97));
    const frame = outputJsonFrame(b).frame.toString('utf8');
    expect(frame).toBe(reference(b));
    expect(JSON.parse(frame).data).toBe(b.toString('utf8'));
  }
});

test('a released frame’s memory serves a later frame; one not yet released is never written over', () => {
  const first = outputJsonFrame(Buffer.from('first frame'));
  const held = outputJsonFrame(Buffer.from('held frame'));
  first.release();
  const third = outputJsonFrame(Buffer.from('third frame'));
  expect(third.frame.buffer).toBe(first.frame.buffer);
  expect(held.frame.toString()).toBe(reference(Buffer.from('held frame')));
  expect(third.frame.toString()).toBe(reference(Buffer.from('third frame')));
  // Released twice, it is still given out once.
  third.release();
  third.release();
  const a = outputJsonFrame(Buffer.from('a'));
  const b = outputJsonFrame(Buffer.from('b'));
  expect(a.frame.buffer).not.toBe(b.frame.buffer);
  held.release();
  a.release();
  b.release();
});
