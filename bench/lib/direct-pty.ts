import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { onCleanup } from './cleanup';

/**
 * The baselines: the same programs on a PTY read by node-pty directly, in this process. No server, no
 * socket, no HTTP: as close to the physical limit as Node gets. node-pty is opened the way the server
 * opens it (bytes, not strings), so the two read the same thing the same way.
 */
export interface DirectPty {
  proc: pty.IPty;
  onData(listener: (data: Buffer) => void): () => void;
  write(data: string | Buffer): void;
  /** Resolves once the accumulated output since the call contains `needle`. */
  waitFor(needle: string | Buffer, timeoutMs?: number): Promise<void>;
  kill(): Promise<void>;
}

export function spawnDirect(file: string, args: string[], opts: { cols?: number; rows?: number; cwd?: string; env?: Record<string, string> } = {}): DirectPty {
  const proc = pty.spawn(file, args, {
    name: 'xterm-256color',
    cols: opts.cols ?? 120,
    rows: opts.rows ?? 40,
    cwd: opts.cwd ?? tmpdir(),
    env: { ...(process.env as Record<string, string>), TERM: 'xterm-256color', ...opts.env },
    encoding: null,
  } as pty.IPtyForkOptions);
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    proc.onExit(() => {
      exited = true;
      resolve();
    }),
  );
  const undo = onCleanup(
    async () => {
      if (!exited) {
        try {
          proc.kill('SIGKILL');
        } catch {
          // gone already
        }
        await Promise.race([exit, new Promise((r) => setTimeout(r, 2000))]);
      }
    },
    () => {
      try {
        if (!exited) process.kill(proc.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    },
  );
  const onData = (listener: (data: Buffer) => void): (() => void) => {
    // With `encoding: null` node-pty hands out Buffers, whatever its typings say.
    const d = proc.onData((x: string | Buffer) => listener(typeof x === 'string' ? Buffer.from(x, 'utf8') : x));
    return () => d.dispose();
  };
  return {
    proc,
    onData,
    write: (data) => proc.write(data as string),
    waitFor(needle, timeoutMs = 10_000) {
      const want = typeof needle === 'string' ? Buffer.from(needle) : needle;
      return new Promise((resolve, reject) => {
        let seen: Buffer = Buffer.alloc(0);
        const timer = setTimeout(() => {
          off();
          reject(new Error(`node-pty ${file}: ${JSON.stringify(want.toString())} did not appear within ${timeoutMs} ms (saw ${JSON.stringify(seen.toString().slice(-200))})`));
        }, timeoutMs);
        const off = onData((d) => {
          seen = Buffer.concat([seen, d]);
          if (seen.indexOf(want) >= 0) {
            clearTimeout(timer);
            off();
            resolve();
          } else if (seen.length > 64 * 1024) seen = Buffer.from(seen.subarray(seen.length - want.length));
        });
      });
    },
    kill: undo,
  };
}

/**
 * An interactive bash whose prompt is a marker, for the round-trip baselines: what the server does
 * (type a line, learn from the shell's prompt that it ran) minus everything the server adds.
 */
export interface MarkerShell extends DirectPty {
  prompt: string;
}

export async function spawnMarkerShell(): Promise<MarkerShell> {
  const dir = mkdtempSync(join(tmpdir(), 'ptydeck-bench-rc-'));
  const prompt = '@@BENCH-PROMPT@@ ';
  const rc = join(dir, 'bashrc');
  writeFileSync(rc, `PS1='${prompt}'\nunset PROMPT_COMMAND\n`);
  const removeDir = onCleanup(() => rmSync(dir, { recursive: true, force: true }), () => rmSync(dir, { recursive: true, force: true }));
  const sh = spawnDirect('/bin/bash', ['--noprofile', '--rcfile', rc, '-i']);
  await sh.waitFor(prompt);
  const kill = sh.kill;
  return {
    ...sh,
    prompt,
    kill: async () => {
      await kill();
      await removeDir();
    },
  };
}
