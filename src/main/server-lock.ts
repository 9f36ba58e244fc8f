import { mkdirSync, rmSync, statSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';

/**
 * One server per home. Two servers on one PTYDECK_HOME would fight over everything in it: the runtime
 * file that agents read, the tmux sessions each would adopt, the state file each would rewrite.
 *
 * The lock is a Unix socket in the home, listened on for the server's whole life. The kernel closes it
 * when the process ends, however it ends, so a crashed holder never leaves a lock that looks held: a
 * socket file nobody listens on refuses connections, and is taken over. A live holder answers every
 * connection with who it is (pid, URL), which is what a refused second server tells the person.
 *
 * Taking over a dead holder's socket file (unlink, then listen) happens under a small mutex (a directory
 * made with mkdir, which is atomic), so two servers that start together after a crash cannot both
 * unlink-and-listen: the one that loses finds the winner listening and is refused like any other.
 */
export interface LockHolder {
  pid: number;
  /** The API's URL, once the holder's HTTP server listens (null while it is still starting). */
  url: string | null;
  startedAt: string;
}

export class ServerRunningError extends Error {
  constructor(
    readonly home: string,
    /** Null when the holder accepted the connection but did not say who it is in time (busy). */
    readonly holder: LockHolder | null,
  ) {
    const who = holder ? `pid ${holder.pid}${holder.url ? `, serving ${holder.url}` : ', still starting'}, since ${holder.startedAt}` : 'it did not say which one';
    super(`another ptydeck server is already running on ${home} (${who}). Stop it first, or give this one its own PTYDECK_HOME.`);
    this.name = 'ServerRunningError';
  }
}

export interface ServerLock {
  /** Tells later probes where this server listens. */
  announce(url: string): void;
  release(): Promise<void>;
}

export const LockConstants = {
  /** A live holder answers at once; one that does not within this long is busy, not dead (it accepted). */
  AnswerMs: 2000,
  /** A takeover mutex older than this was left by a process that died inside the few ms it is held. */
  StaleTakeoverMs: 10_000,
  TakeoverRetryMs: 50,
  MaxAttempts: 100,
  /** sockaddr_un holds 104 (macOS) or 108 (Linux) bytes, with the terminating NUL. */
  MaxSocketPathBytes: 103,
} as const;

export const lockPath = (home: string): string => join(home, 'server.lock');

type Probe = { state: 'free' } | { state: 'held'; holder: LockHolder | null };

/** Who holds the lock of `home`, if anyone (a socket file nobody listens on is free). */
export function probeServerLock(home: string): Promise<Probe> {
  return new Promise((resolve) => {
    const sock = createConnection(lockPath(home));
    let answer = '';
    let settled = false;
    const done = (p: Probe): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(p);
    };
    // Connected but silent: a holder whose event loop is busy. It is alive; do not take its lock.
    const timer = setTimeout(() => done({ state: 'held', holder: null }), LockConstants.AnswerMs);
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => (answer += d));
    sock.on('end', () => {
      try {
        done({ state: 'held', holder: JSON.parse(answer) as LockHolder });
      } catch {
        done({ state: 'held', holder: null });
      }
    });
    sock.on('error', (err: NodeJS.ErrnoException) => {
      // ENOENT: no socket file; ECONNREFUSED: a file nobody listens on (its holder died, or not a socket).
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED' || err.code === 'ENOTSOCK') done({ state: 'free' });
      else done({ state: 'held', holder: null });
    });
  });
}

function listen(path: string, holder: LockHolder): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((conn) => {
      conn.on('error', () => undefined);
      conn.end(JSON.stringify(holder));
    });
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      server.on('error', () => undefined);
      // The lock must not be what keeps a process alive.
      server.unref();
      resolve(server);
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Takes the home's server lock for this process's life, or throws ServerRunningError naming the holder. */
export async function acquireServerLock(home: string): Promise<ServerLock> {
  const path = lockPath(home);
  if (Buffer.byteLength(path) > LockConstants.MaxSocketPathBytes) {
    throw new Error(`PTYDECK_HOME is too long for its lock socket (${path}: at most ${LockConstants.MaxSocketPathBytes} bytes): choose a shorter PTYDECK_HOME`);
  }
  const holder: LockHolder = { pid: process.pid, url: null, startedAt: new Date().toISOString() };
  const takeover = `${path}.takeover`;
  for (let attempt = 0; attempt < LockConstants.MaxAttempts; attempt++) {
    try {
      return held(await listen(path, holder), holder);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
    const probe = await probeServerLock(home);
    if (probe.state === 'held') throw new ServerRunningError(home, probe.holder);
    try {
      mkdirSync(takeover);
    } catch {
      // Someone else is taking over right now (or died doing it, long ago): look again shortly.
      if (ageMs(takeover) > LockConstants.StaleTakeoverMs) rmSync(takeover, { recursive: true, force: true });
      await sleep(LockConstants.TakeoverRetryMs);
      continue;
    }
    try {
      // Still nobody listening, now that only we may remove the file: it is a dead holder's.
      if ((await probeServerLock(home)).state === 'free') rmSync(path, { force: true });
    } finally {
      rmSync(takeover, { recursive: true, force: true });
    }
  }
  throw new Error(`could not take the server lock ${path}`);
}

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function held(server: Server, holder: LockHolder): ServerLock {
  let released: Promise<void> | null = null;
  return {
    announce(url) {
      holder.url = url;
    },
    // Closing the listening socket removes its file too.
    release: () => (released ??= new Promise<void>((r) => server.close(() => r()))),
  };
}
