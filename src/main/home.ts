import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, platform } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** Where ptydeck keeps its credentials and state: PTYDECK_HOME, else the platform's state directory. */
export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PTYDECK_HOME) return env.PTYDECK_HOME;
  if (platform() === 'darwin') return join(homedir(), 'Library', 'Application Support', 'ptydeck');
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'ptydeck');
}

/**
 * ptydeck's home directory holds secrets (tokens) and state. It is created 0700 and every file in it is
 * written 0600, atomically (write a temporary file, then rename), so a reader never sees half a file.
 */
export function ensureHome(home: string): string {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const st = statSync(home);
  if (process.getuid && st.uid !== process.getuid()) throw new Error(`${home} belongs to another user; refusing to keep credentials there`);
  if ((st.mode & 0o077) !== 0) chmodSync(home, 0o700);
  return home;
}

export function writeSecretFile(path: string, content: string): void {
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

export function readJson<T>(path: string): T | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch {
    return null;
  }
}

export interface RuntimeInfo {
  url: string;
  host: string;
  port: number;
  pid: number;
  token: string;
  viewerUrl: string;
  startedAt: string;
}

export const runtimeFilePath = (home: string): string => join(home, 'runtime.json');

export function writeRuntimeFile(home: string, info: RuntimeInfo): string {
  const path = runtimeFilePath(home);
  writeSecretFile(path, JSON.stringify(info, null, 2) + '\n');
  return path;
}

export function removeRuntimeFile(home: string, pid: number): void {
  const path = runtimeFilePath(home);
  const info = readJson<RuntimeInfo>(path);
  // Only remove our own: a second server may have started since.
  if (info && info.pid === pid) rmSync(path, { force: true });
}

export function readRuntimeFile(home: string): RuntimeInfo | null {
  return readJson<RuntimeInfo>(runtimeFilePath(home));
}
