import { expect, test } from 'vitest';
import { NodePtyBackend } from './node-pty-backend';

/**
 * A process that prints and exits at once must not lose the end of its output, even when the event
 * loop is busy (node-pty alone drops what the kernel still holds 200 ms after the exit).
 */
test('every byte of a burst that ends with the process arrives, with a busy consumer', async () => {
  const backend = new NodePtyBackend();
  const runs = await Promise.all(
    Array.from({ length: 5 }, () =>
      new Promise<number>((resolve) => {
        const p = backend.spawn({ file: 'python3', args: ['-c', "import sys; sys.stdout.write('x' * 1000000)"], cwd: '/tmp', env: { PATH: process.env.PATH ?? '' }, cols: 80, rows: 24 });
        let n = 0;
        p.onData((d) => {
          n += d.length;
          // A consumer slower than the PTY (as the server is under load): 2 ms of work per chunk.
          const until = Date.now() + 2;
          while (Date.now() < until);
        });
        p.onExit(() => resolve(n));
      }),
    ),
  );
  expect(runs).toEqual([1000000, 1000000, 1000000, 1000000, 1000000]);
});
