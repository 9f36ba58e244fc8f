import { expect, test } from 'vitest';
import { OutputLog } from './output-log';
import { SessionScreen, type ScreenOwner } from './session-screen';

const owner = (log: OutputLog, state: { watched?: boolean; holding?: boolean } = {}): ScreenOwner & { grown: number } => {
  const o = {
    log,
    grown: 0,
    scrollbackLines: 5000,
    sizes: () => ({ first: { cols: 120, rows: 40 }, after: [] }),
    answerSink: () => null,
    watched: () => state.watched ?? false,
    holding: () => state.holding ?? false,
    grew: (bytes: number) => void (o.grown += bytes),
  };
  return o;
};

const lines = (from: number, n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => `line ${from + i}\r\n`).join(''));

test('a screen nobody watches is dropped once unused long enough, never while watched, held or being parsed; the next use rebuilds it from the log', async () => {
  const log = new OutputLog();
  log.append(lines(1, 20_000));
  const state: { watched?: boolean; holding?: boolean } = {};
  const o = owner(log, state);
  const screen = new SessionScreen(o);
  await screen.get().snapshot(0);
  // Its real size is reported as it grows (a full 5,000-line scrollback at 120 columns: ~12 MiB).
  expect(screen.bytes).toBeGreaterThan(10 * 1024 * 1024);
  expect(o.grown).toBe(screen.bytes);
  const usedAt = Date.now();
  expect(screen.drop(30_000, usedAt + 1_000)).toBe(0);
  state.watched = true;
  expect(screen.drop(30_000, usedAt + 60_000)).toBe(0);
  state.watched = false;
  state.holding = true;
  expect(screen.drop(0)).toBe(0);
  state.holding = false;
  const busy = screen.get().catchUp();
  expect(screen.drop(0)).toBe(0);
  await busy;
  expect(screen.drop(30_000, usedAt + 31_000)).toBeGreaterThan(10 * 1024 * 1024);
  expect(screen.built).toBe(false);
  log.append(Buffer.from('the end\r\n'));
  const lastLines = await screen.get().viewportSince(null, 1 << 20);
  expect(lastLines.text).toMatch(/line 20000\nthe end$/);
});

test('only a watched screen parses ahead when output goes quiet; any other waits until asked', async () => {
  const log = new OutputLog();
  const quiet = new SessionScreen(owner(log));
  const watched = new SessionScreen(owner(log, { watched: true }));
  quiet.get();
  watched.get();
  log.append(lines(1, 100));
  quiet.noteOutput();
  watched.noteOutput();
  await new Promise((r) => setTimeout(r, 600));
  expect(watched.get().lag).toBe(0);
  expect(quiet.get().lag).toBeGreaterThan(0);
  expect((await quiet.get().viewportSince(null, 1 << 20)).text).toMatch(/line 100$/);
});

test('a screen dropped while it parses gives way: the next screen parses at once', async () => {
  const log = new OutputLog();
  log.append(lines(1, 200_000));
  const a = new SessionScreen(owner(log));
  const b = new SessionScreen(owner(log));
  const parsing = a.get().catchUp();
  // Inside its first step (256 KiB handed to the emulator), not before it.
  await new Promise((r) => setTimeout(r, 5));
  expect(a.get().busy).toBe(true);
  a.discard();
  await parsing;
  await b.get().catchUp();
  expect(b.get().lag).toBe(0);
});
