import * as pty from 'node-pty';
import { expect, test } from 'vitest';
import { NodePtyBackend } from './node-pty-backend';
import { readIntoSharedBuffer, sharedReadBuffer } from './shared-read-buffer';

test("node-pty's stream reads into the shared buffer on this Node, and only once set up", async () => {
  const p = pty.spawn('/bin/sh', ['-c', 'printf shared-read-ok'], { cols: 80, rows: 24, encoding: null } as pty.IPtyForkOptions);
  const socket = (p as unknown as { _socket: unknown })._socket;
  let text = '';
  let views = 0;
  let viewsOfShared = 0;
  expect(readIntoSharedBuffer(socket, (d) => {
    views++;
    if (d.buffer === sharedReadBuffer().buffer) viewsOfShared++;
    text += d.toString();
  })).toBe(true);
  expect(readIntoSharedBuffer(socket, () => undefined)).toBe(false);
  let dataEvents = 0;
  p.onData(() => dataEvents++);
  await new Promise<void>((resolve) => p.onExit(() => setTimeout(resolve, 100)));
  expect(text).toContain('shared-read-ok');
  expect(views).toBeGreaterThan(0);
  expect(viewsOfShared).toBe(views);
  expect(dataEvents).toBe(0);
});

test('terminals printing at once through the one buffer each get exactly their own bytes', async () => {
  const backend = new NodePtyBackend();
  const lines = 20000;
  const expected = (tag: string): string => Array.from({ length: lines }, (_, i) => `${tag}${String(i).padStart(7, '0')}\r\n`).join('');
  const got = await Promise.all(
    ['a', 'b', 'c', 'd'].map(
      (tag) =>
        new Promise<string>((resolve) => {
          const p = backend.spawn({
            file: 'python3',
            args: ['-c', `import sys\nfor i in range(${lines}): sys.stdout.write('${tag}%07d\\n' % i)`],
            cwd: '/tmp',
            env: { PATH: process.env.PATH ?? '' },
            cols: 80,
            rows: 24,
          });
          const chunks: Buffer[] = [];
          p.onData((d) => chunks.push(Buffer.from(d)));
          p.onExit(() => resolve(Buffer.concat(chunks).toString()));
        }),
    ),
  );
  expect(got.map((text, i) => text === expected('abcd'[i]))).toEqual([true, true, true, true]);
});
