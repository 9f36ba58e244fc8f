import { spawn } from 'node:child_process';
import { expect, test } from 'vitest';
import { detectProcessTracker } from './process-tracking';

const tracker = detectProcessTracker();

test.skipIf(tracker.kind !== 'cgroup2')('a cgroup v2 group tells when its last member ended, without being polled', async () => {
  const group = tracker.create();
  expect(group.kind).toBe('cgroup2');
  try {
    const { file, args } = group.wrap({ file: '/bin/sleep', args: ['0.3'] });
    const child = spawn(file, args, { stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    await expect.poll(() => group.pids().length, { timeout: 5000 }).toBe(1);
    const emptied = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the group never reported that it emptied')), 5000);
      const off = group.onMaybeEmptied(() => {
        if (!group.isEmpty()) return;
        clearTimeout(timer);
        off();
        resolve();
      });
    });
    await emptied;
    await exited;
    expect(group.isEmpty()).toBe(true);
  } finally {
    group.killAll();
    await expect.poll(() => group.remove(), { timeout: 5000 }).toBe(true);
  }
});
