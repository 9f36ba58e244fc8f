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
 * Its malloc is left as the user's environment sets it. An earlier pass asked glibc for transparent
 * huge pages there (`glibc.malloc.hugetlb=1`): fewer faults while the host's logs first fill. Since the
 * memory budget gives the heap's free pages back after each burst (heap-trim), every burst fills it
 * again, and with huge pages each fill zeroed whole 2 MiB pages: in four alternating pairs of bench
 * runs (50 sessions printing 8 MiB at once) the host's first burst took 6.8-9.3 ms of CPU per MiB with
 * them, 6.0-6.7 without, and the 50-session figure was no better with them (PERFORMANCE.md, twelfth pass).
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
  return { file: runtime.execPath, args: [entry, '--home', home], env };
}

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
