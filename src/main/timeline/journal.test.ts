import { mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { Journal, type NewEvent } from './journal';

const root = mkdtempSync(join(tmpdir(), 'ptydeck-journal-unit-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const event = (i: number, run = 'r1', owner = 'claude'): NewEvent => ({
  kind: 'input',
  text: `echo ${i} ${'x'.repeat(200)}`,
  bytes: 210,
  hidden: false,
  truncated: false,
  who: owner,
  at: new Date().toISOString(),
  offset: i,
  session: `s-${run}`,
  run,
  owner,
});

test('the journal stays under its size, dropping the oldest events first, and says a query lost some', async () => {
  const dir = join(root, 'bounded');
  const max = 64 * 1024;
  const j = new Journal(dir, max, () => undefined);
  for (let i = 1; i <= 2000; i++) {
    j.append(event(i));
    if (i % 100 === 0) await j.flush();
  }
  await j.close();
  const size = readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  expect(size).toBeLessThanOrEqual(max);
  const page = await j.query({ run: 'r1' });
  expect(page.truncated).toBe(true);
  expect(page.events[0].seq).toBeGreaterThan(1);
  expect(page.events.at(-1)!.seq).toBe(2000);
  // Consecutive: whole segments go, never single events from the middle.
  page.events.forEach((e, i) => i && expect(e.seq).toBe(page.events[i - 1].seq + 1));

  // A new journal on the same directory continues the numbering and knows the run.
  const again = new Journal(dir, max, () => undefined);
  expect(again.lastSeq).toBe(2000);
  expect(again.runFacts('r1')).toMatchObject({ session: 's-r1', owner: 'claude' });
  expect(again.append(event(2001)).seq).toBe(2001);
  await again.close();
});

test('queries filter by run, owner and since, and page with `next`', async () => {
  const j = new Journal(join(root, 'query'), 1 << 20, () => undefined);
  for (let i = 1; i <= 30; i++) j.append(event(i, i % 2 ? 'odd' : 'even', i % 2 ? 'claude' : 'gemini'));
  // Unwritten events are answered from memory too.
  expect((await j.query({ run: 'odd' })).events).toHaveLength(15);
  await j.flush();
  expect((await j.query({ owner: 'gemini' })).events.every((e) => e.owner === 'gemini')).toBe(true);
  const first = await j.query({ limit: 10 });
  expect(first).toMatchObject({ more: true, next: 10 });
  const rest = await j.query({ since: first.next });
  expect(rest.events.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 11));
  expect(rest.more).toBe(false);
  await j.close();
});

test('a failed write is reported once, the events wait in memory within the bound, and nothing throws', async () => {
  const dir = join(root, 'full');
  const problems: string[] = [];
  const j = new Journal(dir, 1 << 20, (p) => problems.push(p));
  // The next segment is a full disk.
  symlinkSync('/dev/full', join(dir, '000000000001.jsonl'));
  for (let i = 1; i <= 50; i++) j.append(event(i));
  await j.flush();
  for (let i = 51; i <= 100; i++) j.append(event(i));
  await j.flush();
  expect(problems).toHaveLength(1);
  expect(problems[0]).toMatch(/could not be written/);
  expect((await j.query({})).events).toHaveLength(100);
});

test('an event recorded while a query reads the disk is in the next page, never passed over', async () => {
  const j = new Journal(join(root, 'racing'), 1024 * 1024, () => undefined);
  j.append(event(1));
  await j.flush();
  // The query copies what waits for the disk, then reads the segments: this one comes in between.
  const first = j.query({});
  const late = j.append(event(2));
  const page = await first;
  const next = await j.query({ since: page.next });
  const seqs = [...page.events, ...next.events].map((e) => e.seq);
  expect(seqs).toContain(late.seq);
  expect(new Set(seqs).size).toBe(seqs.length);
  await j.close();
});
