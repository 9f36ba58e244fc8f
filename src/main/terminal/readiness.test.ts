import { expect, test } from 'vitest';
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
