import { afterEach, expect, test, vi } from 'vitest';
import { StreamConstants } from './constants';
import { OutputHub } from './output-hub';

afterEach(() => {
  vi.useRealTimers();
});

/** On a fake clock: a hub with one reader that notes when it was pumped, fed `bytes` every `everyMs` `times` times. */
function streamThroughHub(bytes: number, everyMs: number, times: number): { hub: OutputHub; pumps: number[]; gaps: () => number[] } {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'Date'] });
  const hub = new OutputHub();
  const pumps: number[] = [];
  hub.attach({ pump: () => void pumps.push(Date.now()) });
  for (let t = 0; t < times; t++) {
    hub.notify(bytes);
    vi.advanceTimersByTime(everyMs);
  }
  return { hub, pumps, gaps: () => pumps.slice(1).map((t, i) => t - pumps[i]) };
}

test('a sustained stream is flushed in windows that widen to MaxBatchMs; after a pause, an echo goes at once', () => {
  // 2 KiB every millisecond for 400 ms: one reader's stream (2 MiB/s).
  const { hub, pumps, gaps: gapsNow } = streamThroughHub(2048, 1, 400);
  vi.advanceTimersByTime(StreamConstants.MaxBatchMs);
  const gaps = gapsNow();
  expect(Math.max(...gaps)).toBeLessThanOrEqual(StreamConstants.MaxBatchMs + 1);
  // Most of the stream went out at the widest window, not at BatchMs.
  expect(gaps.filter((g) => g >= StreamConstants.MaxBatchMs).length).toBeGreaterThan(gaps.length / 2);
  expect(pumps.length).toBeLessThan(400 / StreamConstants.BatchMs / 2);
  // Quiet, then a keystroke's echo: on the next turn, not a window later; and the window is short again.
  vi.advanceTimersByTime(100);
  const before = pumps.length;
  const typedAt = Date.now();
  hub.notify(1);
  vi.advanceTimersByTime(0);
  vi.advanceTimersByTime(1);
  expect(pumps.length).toBe(before + 1);
  expect(pumps[before] - typedAt).toBeLessThanOrEqual(1);
  hub.notify(2048);
  vi.advanceTimersByTime(StreamConstants.BatchMs + 1);
  expect(pumps.length).toBe(before + 2);
});

test('output that trickles (less than StreamingBytes per window) keeps the short window', () => {
  // 300 bytes every 2 ms: more than an echo each time, less than StreamingBytes per window.
  const { gaps } = streamThroughHub(300, 2, 100);
  expect(Math.max(...gaps())).toBeLessThanOrEqual(StreamConstants.BatchMs + 1);
});
