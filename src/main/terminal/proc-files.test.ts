import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { ProcFiles, ProcFilesConstants } from './proc-files';

const files = new ProcFiles(4);
afterEach(() => files.clear());
const openFds = (): number => readdirSync('/proc/self/fd').length;
const stateOf = (text: string | null): string | undefined => text?.slice(text.lastIndexOf(')') + 2).split(' ')[0];

test('a kept descriptor reads the file as it is now, not as it was when opened', async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    const path = `/proc/${child.pid}/stat`;
    await expect.poll(() => stateOf(files.read(path))).toBe('S');
    expect(files.size).toBe(1);
    child.kill('SIGSTOP');
    await expect.poll(() => stateOf(files.read(path))).toBe('T');
    // Still the one descriptor, read again.
    expect(files.size).toBe(1);
    expect(files.read(path)).toBe(readFileSync(path, 'latin1'));
  } finally {
    child.kill('SIGKILL');
  }
});

test('once the process is gone its file reads null and its descriptor is closed', async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  const path = `/proc/${child.pid}/status`;
  expect(files.read(path)).toContain('voluntary_ctxt_switches');
  const before = openFds();
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await gone;
  expect(files.read(path)).toBeNull();
  expect(files.size).toBe(0);
  expect(openFds()).toBe(before - 1);
});

test('only the most recently read paths keep a descriptor', () => {
  const before = openFds();
  const paths = ['stat', 'status', 'statm', 'cmdline', 'limits', 'io'].map((f) => `/proc/self/${f}`);
  for (const p of paths) expect(files.read(p)).not.toBeNull();
  expect(files.size).toBe(4);
  expect(openFds()).toBe(before + 4);
  // The oldest two were closed: reading one opens it again and closes the next oldest.
  expect(files.read(paths[0])).not.toBeNull();
  expect(files.size).toBe(4);
  expect(openFds()).toBe(before + 4);
  files.clear();
  expect(openFds()).toBe(before);
});

test('a file larger than the buffer is read whole; one over the limit and a missing one read null', () => {
  const dir = mkdtempSync(join(tmpdir(), 'proc-files-'));
  try {
    const big = 'x'.repeat(10_000) + 'end';
    writeFileSync(join(dir, 'big'), big);
    expect(files.read(join(dir, 'big'))).toBe(big);
    writeFileSync(join(dir, 'huge'), Buffer.alloc(ProcFilesConstants.MaxFileBytes + 1));
    expect(files.read(join(dir, 'huge'))).toBeNull();
    expect(files.read(join(dir, 'absent'))).toBeNull();
    expect(files.size).toBe(1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
