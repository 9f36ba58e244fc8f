import { execFileSync } from 'node:child_process';
import { expect, test } from 'vitest';
import { trimSoon } from './collect';

/**
 * What the memory budget relies on: buffers V8 has collected are free in the C heap but still resident
 * while a live allocation sits above them, and trimSoon gives their pages back. Measured in a child
 * process of its own, so this test's worker and its heap do not blur the figures.
 */
const child = `
const { trimHeap } = require('ptydeck-heap-trim');
const rss = () => Number(/^VmRSS:\\s*(\\d+) kB/m.exec(require('fs').readFileSync('/proc/self/status', 'latin1'))[1]);
let held = [];
for (let i = 0; i < 3000; i++) held.push(Buffer.allocUnsafeSlow(64 * 1024).fill(i & 255));
const pin = Buffer.allocUnsafeSlow(64 * 1024).fill(1); // above them in the heap: free() cannot shrink past it
held = null;
gc();
const freed = rss();
trimHeap((released) => {
  const trimmed = rss();
  process.stdout.write(JSON.stringify({ freed, trimmed, released, pinned: pin[0] }));
});
`;

const glibc = Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);

test.runIf(glibc)('trimSoon: memory V8 freed below a live allocation goes back to the system', () => {
  expect(trimSoon()).toBe(true);
  const out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '-e', child], { encoding: 'utf8', cwd: __dirname })) as { freed: number; trimmed: number; released: boolean };
  // 3000 buffers of 64 KiB: ~190 MiB freed by the collection, still resident until trimmed.
  expect(out.released).toBe(true);
  expect(out.freed - out.trimmed).toBeGreaterThan(100 * 1024);
});
