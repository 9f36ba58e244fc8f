import { afterEach, expect, test, vi } from 'vitest';
import { StreamConstants } from './constants';
import { LogCursor, OutputHub } from './output-hub';
import { OutputLog } from './output-log';

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

test('an agent socket keeps what it has not handed to the kernel: from its oldest unflushed frame, until it stalls or stops', () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  const log = new OutputLog(1024 * 1024);
  const cursorOf = (holdsBackTerminal: boolean, flushes: (() => void)[] = []): LogCursor =>
    new LogCursor({ log, from: 0, wholeCharacters: false, maxFrameBytes: 1000, holdsBackTerminal, send: (_p, _c, _o, flushed) => void flushes.push(flushed), onGap: () => true });
  const flushes: (() => void)[] = [];
  const agent = cursorOf(true, flushes);
  const viewer = cursorOf(false);
  const hub = new OutputHub();
  hub.attach(agent);
  hub.attach(viewer);
  expect(hub.keepFrom(Date.now())).toBe(0);
  log.append(Buffer.alloc(3500, 'x'));
  agent.pump();
  viewer.pump();
  // Everything was handed over, nothing flushed: the agent still needs all of it kept; a viewer never holds.
  expect(agent.offset).toBe(3500);
  expect(viewer.keepsFrom(Date.now())).toBe(Infinity);
  expect(hub.keepFrom(Date.now())).toBe(0);
  // Its frames reach the kernel out of order: what it must still keep starts at the oldest one that has not.
  flushes[0]();
  flushes[2]();
  expect(hub.keepFrom(Date.now())).toBe(1000);
  flushes[1]();
  expect(hub.keepFrom(Date.now())).toBe(3000);
  flushes[3]();
  expect(hub.keepFrom(Date.now())).toBe(3500);
  // One that took nothing for longer than ReaderStallMs holds nothing back, and keeps nothing.
  vi.advanceTimersByTime(StreamConstants.ReaderStallMs + 1);
  expect(hub.keepFrom(Date.now())).toBe(Infinity);
  const fresh = cursorOf(true);
  hub.attach(fresh);
  expect(hub.keepFrom(Date.now())).toBe(0);
  fresh.stop();
  expect(hub.keepFrom(Date.now())).toBe(Infinity);
});
