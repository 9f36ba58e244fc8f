import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sanitizedEnvironment } from '../shell-integration';
import { ensurePrivateDir, hostPaths } from './host-paths';

/**
 * Starting the PTY host: the built entry (out/main/pty-host.js) under this process's own Node. Inside
 * Electron that binary is Electron, which runs as plain Node with ELECTRON_RUN_AS_NODE=1. The host gets
 * the sanitized environment (no PTYDECK_TOKEN, no PTYDECK_* at all, no Electron switches): it needs
 * none of it, and the shells it starts get the environment each session's spawn request carries.
 *
 * One thing is added: glibc's malloc is asked to back its heap with transparent huge pages (where the
 * kernel offers them on request, and glibc is 2.35 or newer; elsewhere the setting is ignored). The host
 * fills fresh memory with every terminal's log until the memory budget is reached, and on the machines
 * measured each 4 KiB page faulted in cost far more than the bytes copied into it (docs/PERFORMANCE.md):
 * 50 sessions printing 8 MiB at once took 160 faults per MiB in the host, 22 with huge pages. The shells
 * never see it: their environment is the server's, sent with each spawn.
 */
export interface HostCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
}

/** The built host entry: beside the running bundle, or (running from source, as the tests do) in out/main. */
export function hostEntryPath(from: string = __dirname): string | null {
  const beside = join(from, 'pty-host.js');
  if (existsSync(beside)) return beside;
  for (let dir = from; ; dir = dirname(dir)) {
    const built = join(dir, 'out', 'main', 'pty-host.js');
    if (existsSync(built)) return built;
    if (dirname(dir) === dir) return null;
  }
}

export function hostCommand(
  home: string,
  entry: string,
  runtime: { execPath: string; versions: Record<string, string | undefined>; env: Record<string, string | undefined> } = process,
): HostCommand {
  const env = sanitizedEnvironment(runtime.env);
  if (runtime.versions.electron) env.ELECTRON_RUN_AS_NODE = '1';
  env.GLIBC_TUNABLES = withHugePageHeap(env.GLIBC_TUNABLES);
  return { file: runtime.execPath, args: [entry, '--home', home], env };
}

/** `tunables` (GLIBC_TUNABLES' syntax: name=value pairs joined by ':') with malloc's huge pages on, unless it says otherwise. */
export function withHugePageHeap(tunables: string | undefined): string {
  if (!tunables) return HugePageHeap;
  if (tunables.split(':').some((t) => t.startsWith('glibc.malloc.hugetlb='))) return tunables;
  return `${tunables}:${HugePageHeap}`;
}

const HugePageHeap = 'glibc.malloc.hugetlb=1';

/**
 * Starts a host for `home`, detached in its own session (it must outlive us and never get our
 * terminal's signals), its output going to the host log. Returns its pid. `nodeArgs` are flags for its
 * node (the bench profiles the host with them); a server passes none.
 */
export function spawnHost(home: string, nodeArgs: string[] = []): number {
  const entry = hostEntryPath();
  if (!entry) throw new Error('the PTY host is not built (out/main/pty-host.js is missing): run `npm run build`');
  const paths = hostPaths(home);
  ensurePrivateDir(paths.dir);
  const cmd = hostCommand(home, entry);
  const logFd = openSync(paths.log, 'a', 0o600);
  try {
    const child = spawn(cmd.file, [...nodeArgs, ...cmd.args], { env: cmd.env, detached: true, stdio: ['ignore', logFd, logFd], cwd: '/' });
    child.on('error', () => undefined);
    child.unref();
    return child.pid ?? 0;
  } finally {
    closeSync(logFd);
  }
}
