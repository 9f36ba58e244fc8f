import { expect, test } from 'vitest';
import { ViewerPace } from './viewer-pace';

const MiB = 1024 * 1024;

function paced(): { pace: ViewerPace; advance(ms: number): void } {
  let t = 1000;
  const pace = new ViewerPace(2 * MiB, 500, () => t);
  return { pace, advance: (ms) => void (t += ms) };
}

test('a viewer that acks as fast as it is fed is not resynced however far a burst puts it behind', () => {
  const { pace, advance } = paced();
  // 40 MiB/s: 1 MiB window acked every 25 ms while the program runs 8 MiB ahead.
  for (let i = 0; i < 20; i++) {
    pace.sent(MiB, 8 * MiB);
    advance(25);
    pace.acked(MiB);
    pace.sent(MiB, 8 * MiB);
    expect(pace.shouldResync(8 * MiB)).toBe(false);
    advance(1);
    pace.acked(MiB);
  }
});

test('a viewer that sat on its window without acking is resynced once it is far behind, even if it then acks it all', () => {
  const { pace, advance } = paced();
  pace.sent(MiB, 4 * MiB);
  advance(300);
  pace.acked(64 * 1024);
  expect(pace.shouldResync(4 * MiB)).toBe(true);
  pace.acked(MiB);
  advance(1);
  pace.sent(64 * 1024, 4 * MiB);
  expect(pace.shouldResync(4 * MiB)).toBe(true);
});

test('a small backlog is always fed, and an idle spell does not count against the pace', () => {
  const { pace, advance } = paced();
  pace.sent(MiB, 0);
  advance(2);
  pace.acked(MiB);
  advance(10_000);
  expect(pace.shouldResync(MiB)).toBe(false);
  pace.sent(MiB, 3 * MiB);
  advance(30);
  pace.acked(512 * 1024);
  // 512 KiB in 30 ms: 3 MiB takes about 180 ms at that pace.
  expect(pace.shouldResync(3 * MiB)).toBe(false);
  expect(pace.shouldResync(20 * MiB)).toBe(true);
});
