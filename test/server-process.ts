import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { endHost } from './helpers';
import { join } from 'node:path';

/**
 * The built `ptydeck serve` as a separate process, the way a person runs it (vitest and Playwright both
 * use this). `close()` is the one place that ends everything such a server started: the server, and the
 * durable sessions it keeps running on purpose when it stops (they live on ptydeck's own tmux server in
 * its home, which nobody could reach again once the home is deleted).
 */
export const cliPath = join(__dirname, '..', 'out', 'main', 'cli.js');
const binPath = join(__dirname, '..', 'bin', 'ptydeck.js');

export interface ServerProcess {
  proc: ChildProcess;
  home: string;
  url: string;
  token: string;
  viewerUrl: string;
  /** What the server printed so far (stdout and stderr). */
  output(): string;
  /** Signals the server and waits for it to exit; durable sessions keep running (a restart, a crash). */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Stops the server and ends every session and process it started, durable ones too. */
  close(): Promise<void>;
}

/** Starts `ptydeck serve --port 0` on `home`; `timeoutMs` only bounds how long a server that never starts is waited for (a loaded machine is slow). */
export async function spawnServer(home: string, env: Record<string, string> = {}, timeoutMs = 45_000): Promise<ServerProcess> {
  if (!existsSync(cliPath)) throw new Error(`the CLI is not built (${cliPath}); npm test builds it first`);
  const proc = spawn(process.execPath, [binPath, 'serve', '--port', '0'], {
    env: { ...process.env, PTYDECK_TOKEN: '', HOME: personHome(home), ...env, PTYDECK_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  proc.stdout!.on('data', (d) => (log += d));
  proc.stderr!.on('data', (d) => (log += d));
  const exited = new Promise<void>((r) => (proc.exitCode !== null || proc.signalCode !== null ? r() : proc.once('exit', () => r())));
  const runtime = join(home, 'runtime.json');
  const deadline = Date.now() + timeoutMs;
  let info: { url: string; token: string; viewerUrl: string; pid: number } | null = null;
  // A runtime file left by an earlier server (killed with SIGKILL) names another pid: wait for ours.
  while (!info || info.pid !== proc.pid) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`ptydeck serve exited (${proc.exitCode ?? proc.signalCode}) before it served:\n${log}`);
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`ptydeck serve did not start within ${timeoutMs} ms:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
    try {
      info = existsSync(runtime) ? JSON.parse(readFileSync(runtime, 'utf8')) : null;
    } catch {
      info = null; // being written
    }
  }
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    await exited;
  };
  return {
    proc,
    home,
    url: info.url,
    token: info.token,
    viewerUrl: info.viewerUrl,
    output: () => log,
    stop,
    async close() {
      await stop('SIGTERM');
      // Its durable sessions in the PTY host outlive it by design: end them, and the host.
      await endHost(home);
      endHome(home);
    },
  };
}

/**
 * A HOME of the test's own with a small ~/.bashrc, so a person's terminal (which reads it) does not
 * depend on this machine's: a real rc may take a minute (pyenv's rehash waits on a lock that a killed
 * shell left behind).
 */
function personHome(home: string): string {
  const dir = join(home, 'person');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, '.bashrc'), "export PTYDECK_TEST_PERSON_RC=loaded\n");
  return dir;
}

/**
 * Ends ptydeck's tmux server in `home` (every durable session on it), tells its PTY host to end (SIGTERM:
 * it ends its sessions and exits; with the home gone it would also on its own), then deletes the home.
 */
export function endHome(home: string): void {
  try {
    const pid = Number.parseInt(readFileSync(join(home, 'ptyhost', 'host.lock'), 'utf8'), 10);
    if (pid > 0) process.kill(pid, 'SIGTERM');
  } catch {
    // no host
  }
  const socket = join(home, 'tmux', 'server.sock');
  if (existsSync(socket)) {
    try {
      execFileSync('tmux', ['-S', socket, 'kill-server'], { stdio: 'ignore', timeout: 10_000 });
    } catch {
      // no server listening there any more
    }
  }
  rmSync(home, { recursive: true, force: true });
}
