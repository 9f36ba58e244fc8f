import { expect, test } from 'vitest';
import { readFileSync } from 'node:fs';
import { NodePtyBackend } from './backends/node-pty-backend';
import { freshWaiters, kernelProbeAvailable, probeForeground, stillInSameWait, type ForegroundState } from './readiness';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, get: () => T | null | false): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = get();
    if (v) return v;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

test.skipIf(!kernelProbeAvailable)('a thread stays in the same wait until input wakes it, and then it no longer is', async () => {
  const p = new NodePtyBackend().spawn({ file: '/bin/sh', args: ['-c', 'read a; echo got-$a; read b'], cwd: '/tmp', env: { PATH: process.env.PATH ?? '' }, cols: 80, rows: 24 });
  let out = '';
  p.onData((d) => void (out += Buffer.from(d).toString()));
  try {
    const baseline: ForegroundState = { pgid: -1, shellPgid: -1, threads: [] };
    const blocked = (): ForegroundState | null => {
      const now = probeForeground(p.pid);
      return now && freshWaiters(baseline, now).length > 0 ? now : null;
    };
    await until('the first read', blocked);
    // Start-up may still wake it once (the terminal settling); look again once it has.
    await sleep(100);
    const first = await until('the first read, settled', blocked);
    const waiters = freshWaiters(baseline, first);
    expect(stillInSameWait(p.pid, first.pgid, waiters)).toBe(true);
    await sleep(50);
    expect(stillInSameWait(p.pid, first.pgid, waiters)).toBe(true);
    p.write('one\r');
    await until('the echo of the first answer', () => out.includes('got-one'));
    // It woke to read the line, printed, and blocked again in the second read: not the same wait.
    expect(stillInSameWait(p.pid, first.pgid, waiters)).toBe(false);
    const second = probeForeground(p.pid);
    expect(freshWaiters(first, second).length).toBeGreaterThan(0);
  } finally {
    p.kill('SIGKILL');
  }
});

test.skipIf(!kernelProbeAvailable)('a program stopped inside its read of the terminal is not waiting for input, and is again once continued', async () => {
  const p = new NodePtyBackend().spawn({ file: '/bin/sh', args: ['-c', 'read a'], cwd: '/tmp', env: { PATH: process.env.PATH ?? '' }, cols: 80, rows: 24 });
  const state = (): string => /^State:\s*(\S)/m.exec(readFileSync(`/proc/${p.pid}/status`, 'latin1'))?.[1] ?? '';
  try {
    const none: ForegroundState = { pgid: -1, shellPgid: -1, threads: [] };
    const reading = await until('the read', () => {
      const now = probeForeground(p.pid);
      return now && freshWaiters(none, now).length > 0 ? now : null;
    });
    process.kill(p.pid, 'SIGSTOP');
    await until('the stop', () => state() === 'T');
    // /proc still names the read it was stopped in, and stopping counted as a switch: it looks like a new wait.
    const stopped = probeForeground(p.pid);
    expect(stopped?.threads.length).toBeGreaterThan(0);
    expect(stopped?.threads.some((t) => t.waitingOnTerminal)).toBe(false);
    expect(freshWaiters(reading, stopped)).toEqual([]);
    expect(stillInSameWait(p.pid, reading.pgid, freshWaiters(none, reading))).toBe(false);
    process.kill(p.pid, 'SIGCONT');
    const again = await until('the read, continued', () => {
      const now = probeForeground(p.pid);
      return now && freshWaiters(reading, now).length > 0 ? now : null;
    });
    expect(again.threads.some((t) => t.waitingOnTerminal)).toBe(true);
  } finally {
    p.kill('SIGKILL');
  }
});
