import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where one PTYDECK_HOME's host lives: a directory only this user may enter (0700), holding the
 * socket, the handshake secret (0600), the lock that keeps it to one host, and the host's log.
 */
export interface HostPaths {
  dir: string;
  socket: string;
  secret: string;
  lock: string;
  log: string;
}

/** Unix socket paths are limited to 108 bytes (sun_path) on Linux, 104 on macOS. */
const MaxSocketPathBytes = 100;

export function hostPaths(home: string): HostPaths {
  const dir = join(home, 'ptyhost');
  return { dir, socket: join(dir, 'host.sock'), secret: join(dir, 'secret'), lock: join(dir, 'host.lock'), log: join(dir, 'host.log') };
}

export function checkSocketPath(path: string): void {
  if (Buffer.byteLength(path) > MaxSocketPathBytes) {
    throw new Error(`the PTY host's socket path ${path} is longer than ${MaxSocketPathBytes} bytes; choose a shorter PTYDECK_HOME`);
  }
}

/**
 * Creates the host directory 0700, or checks an existing one: it must belong to this user, and nobody
 * else may enter it (the kernel then refuses other users' connect() before the host sees them).
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = statSync(dir);
  if (process.getuid && st.uid !== process.getuid()) throw new Error(`${dir} belongs to another user; refusing to use it for the PTY host`);
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}
