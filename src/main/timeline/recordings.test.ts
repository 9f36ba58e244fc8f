import { existsSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { RecordingStore } from './recordings';
import { TimelineDefaults } from './settings';

const root = mkdtempSync(join(tmpdir(), 'ptydeck-recordings-unit-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
const header = (session: string) => {
  const run = `${(Date.now() + n++).toString(36)}-${'abcdef'}`;
  return { version: 2 as const, width: 80, height: 24, timestamp: Math.floor(Date.now() / 1000), ptydeck: { session, owner: 'claude', run } };
};

async function record(store: RecordingStore, session: string, bytes: number): Promise<string> {
  const h = header(session);
  const w = store.open(h, () => undefined)!;
  w.output(Buffer.alloc(bytes, 0x61), Date.now());
  await store.finish(h.ptydeck.run);
  return h.ptydeck.run;
}

test('over the total cap, the oldest closed recordings are deleted first, and a live one is never deleted', async () => {
  const dir = join(root, 'cap');
  const problems: string[] = [];
  const store = new RecordingStore(dir, { ...TimelineDefaults, recordingsTotalBytes: 50_000 }, (p) => problems.push(p));
  const live = header('live');
  const liveWriter = store.open(live, () => undefined)!;
  liveWriter.output(Buffer.alloc(5_000, 0x62), Date.now());
  liveWriter.cut(); // counted now, not after the coalescing delay
  const a = await record(store, 'a', 15_000);
  const b = await record(store, 'b', 15_000);
  const c = await record(store, 'c', 15_000);
  expect(store.list().map((r) => r.session).sort()).toEqual(['b', 'c', 'live']);
  expect(existsSync(join(dir, `${a}.ptyrec`))).toBe(false);
  expect(problems.some((p) => p.includes(a))).toBe(true);
  expect(store.delete(live.ptydeck.run)).toBe('live');
  expect(store.delete(b)).toBe('deleted');
  expect(store.delete(b)).toBe('missing');
  expect(store.get(c)).toMatchObject({ live: false, session: 'c' });
  await store.closeAll();
  expect((statSync(join(dir, `${c}.ptyrec`)).mode & 0o777).toString(8)).toBe('600');
});

test('closed recordings past their age are deleted, at start and when checked; a new store lists what was kept', async () => {
  const dir = join(root, 'age');
  const store = new RecordingStore(dir, { ...TimelineDefaults, recordingMaxAgeDays: 7 }, () => undefined);
  const old = await record(store, 'old', 100);
  const fresh = await record(store, 'fresh', 100);
  await store.closeAll();
  const tenDaysAgo = new Date(Date.now() - 10 * 86400_000);
  utimesSync(join(dir, `${old}.ptyrec`), tenDaysAgo, tenDaysAgo);
  const again = new RecordingStore(dir, { ...TimelineDefaults, recordingMaxAgeDays: 7 }, () => undefined);
  expect(again.list().map((r) => r.key)).toEqual([fresh]);
  expect(again.get(fresh)).toMatchObject({ session: 'fresh', owner: 'claude', live: false, cols: 80, rows: 24 });
  again.ageOut(Date.now() + 8 * 86400_000);
  expect(again.list()).toEqual([]);
  await again.closeAll();
});

test('an asciicast file an earlier version wrote is listed and served as it is, beside the records of a new one', async () => {
  const dir = join(root, 'legacy');
  const store = new RecordingStore(dir, TimelineDefaults, () => undefined);
  const kept = await record(store, 'new', 10);
  await store.closeAll();
  const h = header('legacy');
  const text = `${JSON.stringify(h)}\n[0.5, "o", "hello"]\n`;
  writeFileSync(join(dir, `${h.ptydeck.run}.cast`), text, { mode: 0o600 });
  const again = new RecordingStore(dir, TimelineDefaults, () => undefined);
  expect(again.list().map((r) => r.session).sort()).toEqual(['legacy', 'new']);
  expect(await again.readable(h.ptydeck.run)).toMatchObject({ records: false, size: Buffer.byteLength(text) });
  expect(await again.readable(kept)).toMatchObject({ records: true });
  expect(again.delete(h.ptydeck.run)).toBe('deleted');
  expect(existsSync(join(dir, `${h.ptydeck.run}.cast`))).toBe(false);
  await again.closeAll();
});
