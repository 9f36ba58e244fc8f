import { randomBytes } from 'node:crypto';
import { accessSync, constants as fsConstants, existsSync, mkdirSync, readFileSync, rmdirSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where a session's processes are kept, so that closing the session finds every one of them.
 *
 * A process can leave its parent (double fork), its POSIX session (setsid) and its environment
 * (`env -i`), but not its cgroup: the kernel puts every child in its parent's cgroup, and only a process
 * with write access to the cgroup tree can move it out. So each session gets a cgroup of its own where
 * the machine lets us make one, found in this order:
 *
 *   cgroup2   a child of our own cgroup v2 (/proc/self/cgroup "0::<path>"): on a desktop, the user's
 *             delegated systemd slice; as root, anywhere. `cgroup.kill` ends every member at once.
 *   cgroup1   a child of our own cgroup in a v1 hierarchy (pids, else any named one): members are listed
 *             and killed one by one until none is left.
 *   environment  no cgroup: teardown relies on the process tree, the POSIX session and the session's
 *             environment tag (teardown.ts), which a process can shed. SECURITY.md says what that misses.
 *
 * The process joins its cgroup itself, before it runs anything: the spawned file becomes `/bin/sh -c
 * 'echo $$ > <group>/cgroup.procs; exec "$@"'`. That works for any backend (node-pty, pipes, tmux, a PTY
 * host in another process) because it changes only the file and arguments it is asked to spawn.
 */
export type TrackingKind = 'cgroup2' | 'cgroup1' | 'environment';

export interface ProcessGroup {
  readonly kind: TrackingKind;
  /** The cgroup's directory: what a later start needs to find the group again (null without one). */
  readonly path: string | null;
  /** A spawn, wrapped so that the process enters the group before it runs anything else. */
  wrap(spawn: { file: string; args: string[] }): { file: string; args: string[] };
  /** The members the kernel lists now (empty without a cgroup: then only teardown's own scan knows). */
  pids(): number[];
  /** SIGKILLs every member: at once where the kernel offers it (cgroup.kill), else each listed one. */
  killAll(): void;
  /** True when the kernel says nothing is left in the group; true when there is no cgroup to ask. */
  isEmpty(): boolean;
  /**
   * Calls `changed` whenever the kernel may have emptied the group (cgroup v2 notifies a change of
   * `cgroup.events`), so that a wait for the group to empty need not poll. Returns the unsubscribe.
   * Where the kernel tells nothing (cgroup v1, no cgroup), `changed` is never called: callers still poll.
   */
  onMaybeEmptied(changed: () => void): () => void;
  /** Removes an empty cgroup; false while something is still in it. */
  remove(): boolean;
  /**
   * For process exit, where nothing asynchronous runs any more: kill every member, wait (briefly,
   * blocking) for the kernel to empty the group, and remove it.
   */
  killAndRemoveSync(): void;
}

export interface ProcessTracker {
  readonly kind: TrackingKind;
  /** A new group for one session. */
  create(): ProcessGroup;
  /** The group an earlier server recorded (to take back or to reap); `path` null is the environment kind. */
  open(path: string | null): ProcessGroup;
}

/** The shell that moves itself into the group; `$0` is the group's cgroup.procs, `$@` the real spawn. */
const JOIN_AND_EXEC = 'echo $$ > "$0" 2>/dev/null; exec "$@"';
const SH = '/bin/sh';
const GROUP_PREFIX = 'ptydeck-';

class CgroupGroup implements ProcessGroup {
  constructor(
    readonly kind: 'cgroup2' | 'cgroup1',
    readonly path: string,
  ) {}

  wrap(spawn: { file: string; args: string[] }): { file: string; args: string[] } {
    return { file: SH, args: ['-c', JOIN_AND_EXEC, join(this.path, 'cgroup.procs'), spawn.file, ...spawn.args] };
  }

  pids(): number[] {
    try {
      return readFileSync(join(this.path, 'cgroup.procs'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  }

  killAll(): void {
    if (this.kind === 'cgroup2' && existsSync(join(this.path, 'cgroup.kill'))) {
      try {
        // The kernel kills every member, including any forked while this runs.
        writeFileSync(join(this.path, 'cgroup.kill'), '1');
        return;
      } catch {
        // fall back to the list
      }
    }
    for (const pid of this.pids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }

  isEmpty(): boolean {
    if (this.kind === 'cgroup2') {
      try {
        return /^populated 0$/m.test(readFileSync(join(this.path, 'cgroup.events'), 'utf8'));
      } catch {
        return !existsSync(this.path);
      }
    }
    return this.pids().length === 0;
  }

  onMaybeEmptied(changed: () => void): () => void {
    if (this.kind !== 'cgroup2') return noop;
    try {
      const watcher = watch(join(this.path, 'cgroup.events'), { persistent: false }, () => changed());
      watcher.on('error', () => watcher.close());
      return () => watcher.close();
    } catch {
      return noop;
    }
  }

  remove(): boolean {
    if (!existsSync(this.path)) return true;
    try {
      rmdirSync(this.path);
      return true;
    } catch {
      return false;
    }
  }

  killAndRemoveSync(): void {
    this.killAll();
    const deadline = Date.now() + ExitWaitMs;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    while (!this.isEmpty() && Date.now() < deadline) Atomics.wait(pause, 0, 0, 5);
    this.remove();
  }
}

const noop = (): void => undefined;

/** At process exit, how long to wait for KILLed members to leave the group so it can be removed. */
const ExitWaitMs = 200;

const environmentGroup: ProcessGroup = {
  kind: 'environment',
  path: null,
  wrap: (spawn) => spawn,
  pids: () => [],
  killAll: () => undefined,
  isEmpty: () => true,
  onMaybeEmptied: () => noop,
  remove: () => true,
  killAndRemoveSync: () => undefined,
};

/** Tracking by the environment tag only (no cgroup can be made here, or it was turned off). Recorded groups still open. */
export const environmentTracker: ProcessTracker = { kind: 'environment', create: () => environmentGroup, open: (path) => openRecordedGroup(path) };

class CgroupTracker implements ProcessTracker {
  constructor(
    readonly kind: 'cgroup2' | 'cgroup1',
    /** The directory the session groups are made in (our own cgroup). */
    private readonly base: string,
  ) {}

  create(): ProcessGroup {
    const path = join(this.base, GROUP_PREFIX + randomBytes(8).toString('hex'));
    try {
      mkdirSync(path);
    } catch {
      // The tree changed under us (the slice went away, permissions): this session is tracked without one.
      return environmentGroup;
    }
    return new CgroupGroup(this.kind, path);
  }

  open(path: string | null): ProcessGroup {
    return openRecordedGroup(path);
  }
}

/**
 * A group recorded by this or an earlier server. Only a directory ptydeck made, in a mounted cgroup
 * hierarchy, is taken: a recorded path is never trusted to be anything else.
 */
function openRecordedGroup(path: string | null): ProcessGroup {
  if (!path || !(path.split('/').pop() ?? '').startsWith(GROUP_PREFIX) || !existsSync(join(path, 'cgroup.procs'))) return environmentGroup;
  const mount = cgroupMounts()
    .filter((m) => path.startsWith(m.point + '/'))
    .sort((a, b) => b.point.length - a.point.length)[0];
  return mount ? new CgroupGroup(mount.fstype === 'cgroup2' ? 'cgroup2' : 'cgroup1', path) : environmentGroup;
}

interface CgroupMount {
  point: string;
  fstype: 'cgroup' | 'cgroup2';
  options: string[];
}

function cgroupMounts(): CgroupMount[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const out: CgroupMount[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    const dash = f.indexOf('-');
    if (dash < 6) continue;
    const fstype = f[dash + 1];
    if (fstype !== 'cgroup' && fstype !== 'cgroup2') continue;
    // Only a mount of the hierarchy's root lets us find our own cgroup below it.
    if (f[3] !== '/') continue;
    out.push({ point: f[4], fstype, options: (f[dash + 3] ?? '').split(',') });
  }
  return out;
}

/** Our own cgroup per hierarchy, from /proc/self/cgroup: "0" for v2, else the controllers (or name=...). */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const m = /^(\d+):([^:]*):(.*)$/.exec(line);
      if (m) own.set(m[1] === '0' && m[2] === '' ? 'v2' : m[2], m[3]);
    }
  } catch {
    // no cgroups (not Linux)
  }
  return own;
}

/** A directory we may make session groups in: we can create a child there and write its cgroup.procs. */
function usable(base: string): boolean {
  const probe = join(base, `${GROUP_PREFIX}probe-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    mkdirSync(probe);
  } catch {
    return false;
  }
  try {
    accessSync(join(probe, 'cgroup.procs'), fsConstants.W_OK);
    return true;
  } catch {
    return false;
  } finally {
    try {
      rmdirSync(probe);
    } catch {
      // leave it; it is empty
    }
  }
}

let detected: ProcessTracker | null = null;

/** The best tracking this machine allows (detected once per process). */
export function detectProcessTracker(): ProcessTracker {
  if (detected) return detected;
  detected = environmentTracker;
  if (process.platform !== 'linux') return detected;
  const mounts = cgroupMounts();
  const own = ownCgroups();
  const v2 = mounts.find((m) => m.fstype === 'cgroup2');
  const v2path = own.get('v2');
  if (v2 && v2path !== undefined) {
    const base = join(v2.point, v2path);
    if (usable(base)) return (detected = new CgroupTracker('cgroup2', base));
  }
  // v1: the pids hierarchy first (made for counting processes), then any other we are in.
  const v1 = mounts.filter((m) => m.fstype === 'cgroup').sort((a, b) => Number(b.options.includes('pids')) - Number(a.options.includes('pids')));
  for (const m of v1) {
    const key = [...own.keys()].find((k) => k !== 'v2' && k.split(',').some((c) => m.options.includes(c)));
    if (key === undefined) continue;
    const base = join(m.point, own.get(key)!);
    if (usable(base)) return (detected = new CgroupTracker('cgroup1', base));
  }
  return detected;
}
