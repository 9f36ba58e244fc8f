import { expect, test, vi } from 'vitest';
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

test('input the program has not read yet is pending; whenInputTaken answers once the terminal took all of it', async () => {
  const backend = new NodePtyBackend();
  // Reads nothing for a second, then everything.
  const p = backend.spawn({ file: '/bin/sh', args: ['-c', 'sleep 1; cat > /dev/null'], cwd: '/tmp', env: { PATH: process.env.PATH ?? '' }, cols: 80, rows: 24 });
  p.onData(() => undefined);
  const exited = new Promise<void>((resolve) => p.onExit(() => resolve()));
  try {
    // Lines (a terminal in canonical mode drops what does not fit a line), more than the terminal holds.
    p.write(('x'.repeat(99) + '\n').repeat(20_000));
    await new Promise((r) => setTimeout(r, 300));
    expect(p.pendingInputBytes).toBeGreaterThan(0);
    // Asked while input is pending: the answer comes when nothing is (an early one would see bytes left).
    let pendingThen = -1;
    await new Promise<void>((resolve) =>
      p.whenInputTaken!(() => {
        pendingThen = p.pendingInputBytes ?? -1;
        resolve();
      }),
    );
    expect(pendingThen).toBe(0);
    // With nothing pending it answers at once.
    await new Promise<void>((resolve) => p.whenInputTaken!(resolve));
  } finally {
    p.kill('SIGKILL');
    await exited;
  }
});

test("a listener that throws on its terminal's output is reported, and the terminal goes on: later listeners and the exit still come", async () => {
  const backend = new NodePtyBackend();
  const errors: string[] = [];
  const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void errors.push(args.map(String).join(' ')));
  try {
    const p = backend.spawn({ file: '/bin/sh', args: ['-c', 'echo first; sleep 0.2; echo second'], cwd: '/tmp', env: { PATH: process.env.PATH ?? '' }, cols: 80, rows: 24 });
    let seen = '';
    p.onData(() => {
      throw new Error('this session cannot take output');
    });
    p.onData((d) => void (seen += d.toString()));
    const exited = new Promise<boolean>((resolve) => p.onExit(() => resolve(true)));
    // Thrown out of node-pty's data event, the failure was an uncaught exception: the server's end.
    expect(await exited).toBe(true);
    expect(seen).toContain('first');
    expect(seen).toContain('second');
    expect(errors.some((e) => e.includes("failed on its terminal's output") && e.includes('this session cannot take output'))).toBe(true);
  } finally {
    spy.mockRestore();
  }
});
