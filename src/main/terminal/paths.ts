import { promises as fsp, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import { InvalidRequestError } from './errors';

/**
 * Directories an agent names (a session's cwd, an exec_dir), checked before anything is done with them.
 *
 * Two rules keep a path from reaching a call that can hang the server:
 *   - nothing is ever created on a kernel pseudo-filesystem (proc, sysfs, devtmpfs, cgroup, ...): on
 *     Node 20 `mkdirSync('/proc/x', {recursive: true})` never returns, and /dev or /sys are no place for an
 *     agent's directories anyway. The filesystem is read from the kernel's mount table for the nearest
 *     directory that exists, after following symbolic links, not guessed from a prefix of the path;
 *   - every filesystem call runs off the event loop (libuv's pool) under a deadline, so a filesystem that
 *     does not answer (a dead network mount) costs one pool thread and a clear error, never the server.
 */
export const PathLimits = {
  /** PATH_MAX on Linux: the kernel refuses longer paths anyway, and a longer one is no directory name. */
  MaxPathBytes: 4096,
  /** NAME_MAX on every filesystem ptydeck runs on. */
  MaxNameBytes: 255,
  /** A local filesystem answers a stat in microseconds; five seconds means it is not answering at all. */
  FsDeadlineMs: 5000,
} as const;

/** Filesystems the kernel makes up: nothing an agent names may be created on them. */
const PSEUDO_FILESYSTEMS = new Set([
  'proc',
  'sysfs',
  'devtmpfs',
  'devpts',
  'cgroup',
  'cgroup2',
  'debugfs',
  'tracefs',
  'securityfs',
  'pstore',
  'bpf',
  'configfs',
  'fusectl',
  'efivarfs',
  'mqueue',
  'binfmt_misc',
  'autofs',
  'hugetlbfs',
  'rpc_pipefs',
  'nsfs',
  'selinuxfs',
  'nfsd',
  // macOS
  'devfs',
  'fdesc',
]);

/**
 * Where the kernel's own filesystems live by convention. Checked besides the mount table: what is
 * mounted under them is not always a pseudo-filesystem by type (containers put a tmpfs at
 * /sys/fs/cgroup), and it is still no place for an agent's directories.
 */
const PSEUDO_TREES = ['/dev', '/proc', '/sys'];

interface Mount {
  point: string;
  fstype: string;
}

function readMountTable(): Mount[] | null {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    // id parent major:minor root mount-point options [optional fields] - fstype source super-options
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 6 || dash + 1 >= fields.length) continue;
    mounts.push({ point: unescapeMountPath(fields[4]), fstype: fields[dash + 1] });
  }
  return mounts;
}

/** The kernel writes space, tab, newline and backslash in mount points as octal escapes. */
function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Which pseudo-filesystem `realPath` lies on, described for a person ("proc at /proc"), or null for a real one. */
export function pseudoFilesystemOf(realPath: string): string | null {
  const mounts = readMountTable() ?? [];
  // The mount that holds a path is the one with the longest mount point above it; of several at the same
  // point, the last mounted hides the others.
  let best: Mount | null = null;
  for (const m of mounts) {
    if (isAtOrBelow(realPath, m.point) && (!best || m.point.length >= best.point.length)) best = m;
  }
  if (best && PSEUDO_FILESYSTEMS.has(best.fstype)) return `${best.fstype} at ${best.point}`;
  const tree = PSEUDO_TREES.find((t) => isAtOrBelow(realPath, t));
  return tree ? `the kernel's ${tree} tree` : null;
}

function isAtOrBelow(path: string, dir: string): boolean {
  return dir === '/' || path === dir || path.startsWith(dir + '/');
}

async function withDeadline<T>(what: string, field: string, raw: string, op: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new InvalidRequestError(`${field} ${JSON.stringify(raw)}: the filesystem did not answer (${what}) within ${PathLimits.FsDeadlineMs / 1000} s`)),
      PathLimits.FsDeadlineMs,
    );
  });
  try {
    return await Promise.race([op, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The checks every named path passes first: text only, no filesystem. Returns the absolute, normalised path. */
function checkedText(raw: string, field: string): string {
  if (raw.includes('\0')) throw new InvalidRequestError(`${field} must not contain NUL bytes`);
  const expanded = raw === '~' ? homedir() : raw.startsWith('~/') ? homedir() + raw.slice(1) : raw;
  if (!isAbsolute(expanded)) throw new InvalidRequestError(`${field} must be an absolute path (got ${JSON.stringify(raw)})`);
  if (Buffer.byteLength(expanded) > PathLimits.MaxPathBytes) throw new InvalidRequestError(`${field} is longer than ${PathLimits.MaxPathBytes} bytes`);
  const long = expanded.split('/').find((part) => Buffer.byteLength(part) > PathLimits.MaxNameBytes);
  if (long !== undefined) throw new InvalidRequestError(`${field} has a component longer than ${PathLimits.MaxNameBytes} bytes (${JSON.stringify(long.slice(0, 32))}...)`);
  return resolve(expanded);
}

/** `dir` as an existing directory (its real path); the error names `field` as the request called it. */
export async function existingDirectory(dir: string, field = 'cwd'): Promise<string> {
  const path = checkedText(dir, field);
  let st;
  try {
    st = await withDeadline('stat', field, dir, fsp.stat(path));
  } catch (err) {
    if (err instanceof InvalidRequestError) throw err;
    throw new InvalidRequestError(`${field} ${JSON.stringify(dir)} does not exist`);
  }
  if (!st.isDirectory()) throw new InvalidRequestError(`${field} ${JSON.stringify(dir)} is not a directory`);
  return withDeadline('realpath', field, dir, fsp.realpath(path));
}

/**
 * `dir` as a directory, created (with its parents) when missing, as execd does. Refused before anything
 * is created: a relative path, an over-long one, one under a file, and one whose nearest existing
 * directory is on a pseudo-filesystem.
 */
export async function creatableDirectory(dir: string, field = 'cwd'): Promise<string> {
  const path = checkedText(dir, field);
  // The nearest directory that exists, and where it really is.
  let ancestor = path;
  for (;;) {
    const st = await withDeadline('lstat', field, dir, fsp.lstat(ancestor).catch(() => null));
    if (st) break;
    const up = dirname(ancestor);
    if (up === ancestor) break;
    ancestor = up;
  }
  let real: string;
  try {
    real = await withDeadline('realpath', field, dir, fsp.realpath(ancestor));
  } catch (err) {
    if (err instanceof InvalidRequestError) throw err;
    throw new InvalidRequestError(`${field} ${JSON.stringify(dir)}: ${ancestor} cannot be resolved (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const pseudo = pseudoFilesystemOf(real);
  if (pseudo) {
    throw new InvalidRequestError(
      `${field} ${JSON.stringify(dir)} is on a kernel pseudo-filesystem (${pseudo}); ptydeck creates no directories there`,
    );
  }
  const st = await withDeadline('stat', field, dir, fsp.stat(real));
  if (!st.isDirectory()) throw new InvalidRequestError(`${field} ${JSON.stringify(dir)}: ${ancestor === path ? 'it' : ancestor} is not a directory`);
  if (ancestor !== path) {
    try {
      await withDeadline('mkdir', field, dir, fsp.mkdir(path, { recursive: true }));
    } catch (err) {
      if (err instanceof InvalidRequestError) throw err;
      throw new InvalidRequestError(`${field} ${JSON.stringify(dir)}: the directory cannot be created (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  return existingDirectory(path, field);
}
