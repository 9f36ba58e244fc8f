import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { HostConstants } from '../constants';
import { commandLine, readStat } from '../processes';
import { checkSocketPath, ensurePrivateDir, hostPaths, type HostPaths } from './host-paths';
import { HostServer } from './host-server';
import { spillDirIn } from '../memory-budget';

/**
 * The PTY host process: one per PTYDECK_HOME, started (detached) by the first server that needs it,
 * outliving that server. It holds the terminals and their logs; servers come and go as its clients.
 *
 * Start-up order: private directory, lock (one host per home), fresh secret, socket. The secret is
 * written before the socket exists, so a client that can connect can always authenticate.
 */
export async function runHost(home: string): Promise<void> {
  const paths = hostPaths(home);
  checkSocketPath(paths.socket);
  ensurePrivateDir(paths.dir);
  if (!acquireLock(paths)) {
    // Another host already serves this home: it is the one the servers will find.
    process.exit(0);
  }
  const log = (m: string): void => void process.stderr.write(`${new Date().toISOString()} ptydeck host ${process.pid}: ${m}\n`);
  const secret = randomBytes(32);
  writePrivate(paths.secret, secret.toString('hex'));
  rmSync(paths.socket, { force: true });

  let exiting = false;
  const cleanup = (): void => {
    // Only our own files: a host that started after us (ours was stale) keeps its.
    if (lockOwner(paths) === process.pid) {
      rmSync(paths.socket, { force: true });
      rmSync(paths.lock, { force: true });
    }
  };
  const exit = (): void => {
    if (exiting) return;
    exiting = true;
    server.close();
    cleanup();
    process.exit(0);
  };
  const server = new HostServer({ secret, onIdle: exit, log, spillDir: spillDirIn(paths.dir) });
  await server.listen(paths.socket);
  chmodSync(paths.socket, 0o600);
  log(`listening on ${paths.socket}`);
  const socketIno = statSync(paths.socket).ino;
  const watch = setInterval(() => {
    let ino: number | null = null;
    try {
      ino = statSync(paths.socket).ino;
    } catch {
      // gone
    }
    if (ino === socketIno) return;
    log('the socket was removed: nobody can reach this host any more; ending every session');
    clearInterval(watch);
    void server.endAll().then(exit);
  }, HostConstants.SocketCheckMs);
  watch.unref();

  process.on('exit', cleanup);
  // Detached: no terminal sends us HUP or INT; whoever sends TERM wants every session ended.
  process.on('SIGHUP', () => undefined);
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => {
    log('SIGTERM: ending every session');
    void server.endAll().then(exit);
  });
  // A bug must not take every terminal down with it: report and carry on.
  process.on('uncaughtException', (err) => log(`uncaught: ${err.stack ?? err.message}`));
  process.on('unhandledRejection', (err) => log(`unhandled rejection: ${String(err)}`));
}

function writePrivate(path: string, content: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** The pid in the lock file, when that process is alive and is still the one that wrote it. */
function lockOwner(paths: HostPaths): number | null {
  let text: string;
  try {
    text = readFileSync(paths.lock, 'utf8');
  } catch {
    return null;
  }
  const [pid, start] = text.trim().split(' ').map(Number);
  const st = Number.isInteger(pid) && pid > 0 ? readStat(pid) : null;
  if (!st || st.startTime !== start || st.state === 'Z') return null;
  return pid;
}

/** One host per home: exclusive creation of the lock file; a lock whose writer is gone is taken over. */
function acquireLock(paths: HostPaths): boolean {
  const me = `${process.pid} ${readStat(process.pid)?.startTime ?? 0}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(paths.lock, 'wx', 0o600);
      writeSync(fd, me);
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = lockOwner(paths);
    if (owner !== null && owner !== process.pid && /pty-host/.test(commandLine(owner))) return false;
    rmSync(paths.lock, { force: true });
  }
  return false;
}
