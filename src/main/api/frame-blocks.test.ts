import { expect, test } from 'vitest';
import { frameOfSize, headedFrame } from './frame-blocks';

test('a headed frame is the head then the payload; a frame larger than a block is its own memory and never given out again', () => {
  const small = headedFrame(Uint8Array.of(2), Buffer.from('payload'));
  expect([...small.frame]).toEqual([2, ...Buffer.from('payload')]);
  const big = frameOfSize(1024 * 1024);
  big.frame.fill(7);
  big.release();
  const next = frameOfSize(1024 * 1024);
  expect(next.frame.buffer).not.toBe(big.frame.buffer);
  // The small one's block, once released, serves the next small frame.
  small.release();
  const again = frameOfSize(10);
  expect(again.frame.buffer).toBe(small.frame.buffer);
  again.release();
});
