import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostBackend } from '../../src/main/terminal/backends/host-backend';
import { spawnHost } from '../../src/main/terminal/host/launch';
import { hostPaths } from '../../src/main/terminal/host/host-paths';
import { onCleanup } from './cleanup';

/**
 * The built headless server (`node bin/ptydeck.js serve --port 0`) as a child process, the way a person
 * runs it, in a fresh PTYDECK_HOME. Each case starts its own, so that one case's sessions, logs and
 * heap never weigh on the next one's figures.
 */
export interface BenchServer {
  url: string;
  token: string;
  pid: number;
  home: string;
  /** A fresh one-time login link to the viewer (the page trades it for a viewer session). */
  loginUrl(): Promise<string>;
  api<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** A ws:// URL for `path` with the admin token in the query (WebSockets may carry it there). */
  wsUrl(path: string, query?: Record<string, string>): string;
  /** The last lines the server printed, for error messages. */
  log(): string;
  /** The pid of the server's own tmux server (tmux backend), whose CPU is not in the server's. */
  tmuxPid(): number | null;
  /** The pid of the PTY host serving this server's home (PTY host backend), whose CPU is not in the server's. */
  hostPid(): number | null;
  /** The working directory sessions start in. */
  cwd: string;
  /**
   * Kills the server with SIGKILL, as a crash would, and leaves its home (and PTY host) for a
   * successor: startServer({}, [], { home, cwd }) on the same home takes over, cleanup included.
   */
  crash(): Promise<void>;
  stop(): Promise<void>;
}

const REPO = join(__dirname, '..', '..');

/**
 * Limits every case needs raised: 100 sessions at once, created faster than 120 a minute, many sockets
 * (50 opened in one go: more than the default cap on connections that have not authenticated yet, which
 * then closes the oldest of them mid-upgrade, on a loaded machine).
 * And the backend pinned to the PTY host (the default, `auto`; pinned so that a host that cannot start
 * fails the case instead of quietly measuring node-pty in the server): cases that measure another
 * backend ask for it explicitly.
 */
export type BenchBackend = 'host' | 'native' | 'tmux';

export const BenchLimits: Record<string, string> = {
  AIO_SHELL_BACKEND: 'host',
  AIO_SHELL_MAX_SESSIONS: '250',
  PTYDECK_MAX_CREATES_PER_MINUTE: '100000',
  PTYDECK_MAX_SOCKETS: '1000',
  PTYDECK_MAX_UNAUTHENTICATED_CONNECTIONS: '1000',
};

/**
 * `nodeArgs`: extra flags for the server's node; BENCH_NODE_ARGS (space-separated) adds some to every
 * server of a run, e.g. `BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench -- --only scale`.
 * BENCH_SERVER_LOG=<file> appends everything each server prints there (with `--trace-gc` in
 * BENCH_NODE_ARGS: every collection the server made, and why). BENCH_HOST_NODE_ARGS does for the PTY
 * host what BENCH_NODE_ARGS does for the server: the bench then starts the host itself, with them, before
 * the server, which finds it running (the product has no way to pass flags to the host).
 */
export async function startServer(env: Record<string, string> = {}, nodeArgs: string[] = [], reuse?: { home: string; cwd: string }): Promise<BenchServer> {
  const home = reuse?.home ?? mkdtempSync(join(tmpdir(), 'ptydeck-bench-home-'));
  const cwd = reuse?.cwd ?? mkdtempSync(join(tmpdir(), 'ptydeck-bench-cwd-'));
  // A successor must not read its predecessor's runtime file as its own.
  rmSync(join(home, 'runtime.json'), { force: true });
  const hostArgs = (process.env.BENCH_HOST_NODE_ARGS ?? '').split(' ').filter(Boolean);
  if (hostArgs.length && (env.AIO_SHELL_BACKEND ?? BenchLimits.AIO_SHELL_BACKEND) === 'host' && !reuse) await startHostWith(home, hostArgs);
  const proc: ChildProcess = spawn(process.execPath, [...((process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)), ...nodeArgs, join(REPO, 'bin', 'ptydeck.js'), 'serve', '--port', '0'], {
    cwd: REPO,
    env: {
      ...process.env,
      PTYDECK_TOKEN: '',
      PTYDECK_CWD: cwd,
      // The shells must be plain: a developer's ~/.bashrc would make every figure depend on it.
      PTYDECK_SHELL: '/bin/bash',
      ...BenchLimits,
      ...env,
      PTYDECK_HOME: home,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (d: Buffer): void => {
    tail = (tail + d.toString('utf8')).slice(-8000);
    if (process.env.BENCH_SERVER_LOG) appendFileSync(process.env.BENCH_SERVER_LOG, d);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  let stopping = false;
  const exited = new Promise<void>((resolve) =>
    proc.once('exit', (code, signal) => {
      // A server that dies under a case is a finding: say so with what it printed last.
      if (!stopping) process.stderr.write(`bench: the server (pid ${proc.pid}) exited unexpectedly (code ${code}, signal ${signal}); its last output:\n${tail}\n`);
      resolve();
    }),
  );

  // tmux-backed sessions outlive the server by design (they are its durable terminals): end the
  // server's own tmux server too, by its socket in this home, or its shells would run on.
  const killTmux = (): void => {
    const socket = join(home, 'tmux', 'server.sock');
    if (existsSync(socket)) spawnSync('tmux', ['-S', socket, 'kill-server'], { stdio: 'ignore', timeout: 5000 });
  };
  // After a crash() the home belongs to the successor server: this one's cleanup must leave it alone.
  let handedOver = false;
  const undo = onCleanup(
    async () => {
      if (handedOver) return;
      stopping = true;
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(killer);
      }
      killTmux();
      // The PTY host keeps durable sessions for the next server by design: a case ends it with its server.
      await new HostBackend(home).shutdownHost();
      rmSync(home, { recursive: true, force: true });
      rmSync(cwd, { recursive: true, force: true });
    },
    () => {
      if (handedOver) return;
      stopping = true;
      const host = hostPidOf(home);
      if (host) process.kill(host, 'SIGKILL');
      proc.kill('SIGKILL');
      killTmux();
      rmSync(home, { recursive: true, force: true });
      rmSync(cwd, { recursive: true, force: true });
    },
  );

  const runtime = join(home, 'runtime.json');
  const deadline = Date.now() + 20_000;
  while (!existsSync(runtime)) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      await undo();
      throw new Error(`the server did not start:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  // The file may be seen before its contents are complete.
  let info: { url: string; token: string; pid: number } | null = null;
  while (!info) {
    try {
      info = JSON.parse(readFileSync(runtime, 'utf8'));
    } catch {
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  const { url, token, pid } = info!;
  return {
    url,
    token,
    pid,
    home,
    async loginUrl() {
      const res = await fetch(`${url}/api/login-links`, { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
      if (!res.ok) throw new Error(`no login link: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { url: string }).url;
    },
    async api(method, path, body) {
      const res = await fetch(url + path, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: any = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = text;
      }
      return { status: res.status, body: parsed };
    },
    wsUrl(path, query = {}) {
      const u = new URL(path, url.replace(/^http/, 'ws'));
      for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
      u.searchParams.set('api_key', token);
      return u.toString();
    },
    log: () => tail,
    tmuxPid() {
      const socket = join(home, 'tmux', 'server.sock');
      if (!existsSync(socket)) return null;
      const r = spawnSync('tmux', ['-S', socket, 'display-message', '-p', '#{pid}'], { encoding: 'utf8', timeout: 5000 });
      const pid = Number.parseInt(r.stdout ?? '', 10);
      return Number.isInteger(pid) && pid > 0 ? pid : null;
    },
    hostPid: () => hostPidOf(home),
    cwd,
    async crash() {
      stopping = true;
      proc.kill('SIGKILL');
      await exited;
      handedOver = true;
      await undo();
    },
    stop: undo,
  };
}

/** Starts the PTY host for `home` as the server would, with extra node flags; resolves once it listens. */
async function startHostWith(home: string, nodeArgs: string[]): Promise<void> {
  const paths = hostPaths(home);
  spawnHost(home, nodeArgs);
  const deadline = Date.now() + 10_000;
  while (!existsSync(paths.socket)) {
    if (Date.now() > deadline) throw new Error(`the PTY host started with ${nodeArgs.join(' ')} did not listen within 10 s (see ${paths.log})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function hostPidOf(home: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(join(home, 'ptyhost', 'host.lock'), 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
