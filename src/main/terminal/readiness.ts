import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, readSync } from 'node:fs';
import { ProcFiles } from './proc-files';
import { hasProcfs, parseStat, readStat, terminalOf, type ProcStat } from './processes';

/**
 * Is the terminal's foreground program waiting for input? Answered from the kernel, not from output:
 *
 *   1. the foreground process group is field 8 (tpgid) of /proc/<shell>/stat, read now;
 *   2. a thread of a process in that group is blocked in a syscall that waits on the terminal:
 *      read/readv/pread on a terminal fd; select/pselect6 with a terminal fd in its read set;
 *      poll/ppoll with a terminal fd asking for input; epoll_wait on an epoll set that watches one
 *      (/proc/<pid>/task/<tid>/syscall gives the syscall and its arguments; the sets are read from
 *      /proc/<pid>/mem, the epoll set from /proc/<pid>/fdinfo);
 *   3. and asleep in it: the syscall file also names the syscall of a thread that is runnable or stopped
 *      inside it (sleptThroughWait).
 *
 * A wait that already existed before our write must not count: the program has not answered yet.
 * Each thread's voluntary context-switch count tells: it grows every time the thread wakes and blocks
 * again, so a wait counts only if the thread is new, or has switched since the baseline taken at the
 * write, or the foreground group itself changed.
 *
 * Where this is unavailable (no /proc, an architecture whose syscall numbers we do not know), the
 * caller falls back to prompt markers and silence, and says so.
 */
const SYSCALLS: Record<string, { read: number[]; select: number[]; poll: number[]; epoll: number[] }> = {
  x64: { read: [0, 17, 19], select: [23, 270], poll: [7, 271], epoll: [232, 281, 441] },
  arm64: { read: [63, 65, 67], select: [72], poll: [73], epoll: [22, 441] },
};
const table = SYSCALLS[process.arch];
/** The syscalls among those whose timeout is a plain int rather than an address (x64 poll; epoll_pwait2 is the exception to epoll's int). */
const POLL = process.arch === 'x64' ? 7 : -1;
const EPOLL_PWAIT2 = 441;

export const kernelProbeAvailable = hasProcfs && table !== undefined;

/** The files every look reads again (shell, leader, their threads), kept open between looks. */
const kept = new ProcFiles();
const keptStat = (pid: number): ProcStat | null => {
  const text = kept.read(`/proc/${pid}/stat`);
  return text === null ? null : parseStat(pid, text);
};

export interface ThreadState {
  key: string;
  voluntarySwitches: number;
  waitingOnTerminal: boolean;
  /**
   * The wait has a timeout (select/poll/epoll with one): the program wakes by itself, as `top` does to
   * redraw. A plain read, or a wait without a timeout, lasts until someone types.
   */
  waitTimed: boolean;
}

export interface ForegroundState {
  pgid: number;
  shellPgid: number;
  threads: ThreadState[];
}

/**
 * The foreground group of the shell's terminal and what each of its threads is doing, or null when unknown.
 * `waits: false` reads only who is there and their switch counts (a baseline to compare later looks
 * with needs no more), skipping what each thread waits on.
 */
export function probeForeground(shellPid: number, { waits = true }: { waits?: boolean } = {}): ForegroundState | null {
  if (!kernelProbeAvailable) return null;
  const shell = keptStat(shellPid);
  if (!shell || shell.tpgid <= 0) return null;
  const tty = terminalOfShell(shell);
  if (!tty) return null;
  const threads: ThreadState[] = [];
  for (const member of groupMembers(shell.tpgid, shell.session)) {
    const pid = member.pid;
    // Whether a descriptor is the terminal is asked only of those a waiting syscall names (a program busy
    // printing, the common case, costs no look at its descriptors).
    const isTty = terminalFdTest(pid, tty);
    let tids: string[];
    try {
      tids = member.threads === 1 ? [String(pid)] : readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      const before = threadStatus(pid, tid);
      if (!before) continue;
      const wait = waits && before.state === 'S' ? sleptThroughWait(pid, tid, before, isTty) : NOT_WAITING;
      threads.push({ key: `${pid}/${tid}`, voluntarySwitches: before.voluntarySwitches, waitingOnTerminal: wait.waiting, waitTimed: wait.timed });
    }
  }
  return { pgid: shell.tpgid, shellPgid: shell.pgrp, threads };
}

/** The threads of `now` in a terminal wait that did not already exist in `baseline`. */
export function freshWaiters(baseline: ForegroundState | null, now: ForegroundState | null): ThreadState[] {
  if (!now) return [];
  const before = new Map((baseline?.threads ?? []).map((t) => [t.key, t.voluntarySwitches]));
  const groupChanged = !baseline || baseline.pgid !== now.pgid;
  return now.threads.filter((t) => t.waitingOnTerminal && (groupChanged || !before.has(t.key) || t.voluntarySwitches > before.get(t.key)!));
}

/** True when `now` shows a terminal wait that did not already exist in `baseline`. */
export function freshTerminalWait(baseline: ForegroundState | null, now: ForegroundState | null): boolean {
  return freshWaiters(baseline, now).length > 0;
}

/**
 * True when one of `waiters` (threads of group `pgid` seen waiting on the terminal) has not woken since
 * (its voluntary switch count held) and the group still holds the terminal: it is in the same wait, and
 * everything it wrote before was written before it blocked. Two small reads instead of a full look.
 */
export function stillInSameWait(shellPid: number, pgid: number, waiters: ThreadState[]): boolean {
  if (!waiters.length) return false;
  const shell = keptStat(shellPid);
  if (!shell || shell.tpgid !== pgid) return false;
  return waiters.some((t) => {
    const [pid, tid] = t.key.split('/');
    const now = threadStatus(Number(pid), tid);
    // Woken and not yet blocked again (runnable, or stopped) keeps its count: asleep is part of "the same wait".
    return now !== null && now.state === 'S' && now.voluntarySwitches === t.voluntarySwitches;
  });
}

/** True when any thread of the foreground group waits on the terminal right now (old waits included). */
export function anyTerminalWait(now: ForegroundState | null): boolean {
  return now !== null && now.threads.some((t) => t.waitingOnTerminal);
}

/**
 * Who to look at in the foreground group. Its leader (pid = pgid) is the program a person started: the
 * REPL, the `read`, the first program of a pipeline, the one that reads the terminal. Reading only it
 * keeps a probe to a few small files; a machine can run thousands of processes, and a scan of all of
 * /proc costs tens of milliseconds. Only when the leader is gone are the other members looked for.
 */
function groupMembers(pgid: number, session: number): ProcStat[] {
  const leader = keptStat(pgid);
  if (leader && leader.pgrp === pgid && leader.session === session && leader.state !== 'Z') return [leader];
  const out: ProcStat[] = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of pids) {
    if (name.charCodeAt(0) > 57) continue;
    const s = readStat(Number(name));
    if (s && s.pgrp === pgid && s.session === session) out.push(s);
  }
  return out;
}

/** The shell's terminal, read once per shell (a shell keeps its terminal for life): pid and start time name it. */
const shellTerminals = new Map<string, string>();
const ShellTerminalsKept = 256;

function terminalOfShell(shell: ProcStat): string | null {
  const key = `${shell.pid}:${shell.startTime}`;
  const known = shellTerminals.get(key);
  if (known !== undefined) return known;
  const tty = terminalOf(shell.pid);
  if (tty === null) return null; // not (yet) on a terminal: ask again next time
  if (shellTerminals.size >= ShellTerminalsKept) shellTerminals.delete(shellTerminals.keys().next().value!);
  shellTerminals.set(key, tty);
  return tty;
}

/** Whether descriptor `fd` of `pid` is `tty`, each descriptor asked at most once per look. */
function terminalFdTest(pid: number, tty: string): (fd: number) => boolean {
  const seen = new Map<number, boolean>();
  return (fd) => {
    let is = seen.get(fd);
    if (is === undefined) {
      try {
        is = readlinkSync(`/proc/${pid}/fd/${fd}`) === tty;
      } catch {
        is = false; // closed meanwhile
      }
      seen.set(fd, is);
    }
    return is;
  };
}

interface ThreadStatus {
  /** R running or runnable, S asleep (interruptibly: where a read of a terminal, a select, a poll waits), D, T, Z... */
  state: string;
  voluntarySwitches: number;
}

function threadStatus(pid: number, tid: string): ThreadStatus | null {
  const text = kept.read(`/proc/${pid}/task/${tid}/status`);
  if (text === null) return null;
  const state = /^State:\s*(\S)/m.exec(text);
  const switches = /^voluntary_ctxt_switches:\s*(\d+)/m.exec(text);
  return state && switches ? { state: state[1], voluntarySwitches: Number(switches[1]) } : null;
}

/**
 * The syscall file names the syscall a thread is in whether it sleeps there or not: a thread preempted
 * inside a read that returns at once (bash takes a typed line one byte per read), or stopped by a signal
 * while it was blocked, shows a read of the terminal too, and neither waits for input. So a wait counts
 * only if the thread was asleep before the syscall was read and is still in that same sleep after (asleep,
 * its voluntary switch count unchanged: any wake and block again in between adds one).
 */
function sleptThroughWait(pid: number, tid: string, before: ThreadStatus, isTty: (fd: number) => boolean): TerminalWait {
  const wait = terminalWait(pid, tid, isTty);
  if (!wait.waiting) return wait;
  const after = threadStatus(pid, tid);
  return after !== null && after.state === 'S' && after.voluntarySwitches === before.voluntarySwitches ? wait : NOT_WAITING;
}

interface TerminalWait {
  waiting: boolean;
  timed: boolean;
}

const NOT_WAITING: TerminalWait = { waiting: false, timed: false };

/** An int argument (poll's and epoll_wait's timeout) as the kernel reads it: the register's low 32 bits, signed. */
const intArg = (v: bigint): number => Number(BigInt.asIntN(32, v));

function terminalWait(pid: number, tid: string, isTty: (fd: number) => boolean): TerminalWait {
  const text = kept.read(`/proc/${pid}/task/${tid}/syscall`);
  if (text === null) return NOT_WAITING;
  const fields = text.trim().split(' ');
  // "running", or "-1 sp pc" when not in a syscall.
  const nr = Number(fields[0]);
  if (!Number.isInteger(nr) || nr < 0 || fields.length < 4) return NOT_WAITING;
  const arg = (i: number): bigint => BigInt(fields[1 + i]);
  const waits = table.read.includes(nr) || table.select.includes(nr) || table.poll.includes(nr) || table.epoll.includes(nr);
  if (!waits) return NOT_WAITING;
  const found = (timed: boolean): TerminalWait => ({ waiting: true, timed });
  if (table.read.includes(nr)) return isTty(Number(arg(0))) ? found(false) : NOT_WAITING;
  if (table.select.includes(nr)) {
    const nfds = Number(arg(0));
    const readfds = arg(1);
    if (readfds === 0n || nfds <= 0) return NOT_WAITING;
    const words = readMemory(pid, readfds, Math.ceil(Math.min(nfds, 1024) / 64) * 8);
    if (!words) return NOT_WAITING;
    const last = Math.min(nfds, words.length * 8);
    for (let fd = 0; fd < last; fd++) {
      // select and pselect6 both take the timeout's address as their fifth argument; NULL waits forever.
      if ((words[fd >> 3] & (1 << (fd & 7))) !== 0 && isTty(fd)) return found(arg(4) !== 0n);
    }
    return NOT_WAITING;
  }
  if (table.poll.includes(nr)) {
    const nfds = Math.min(Number(arg(1)), 4096);
    const mem = readMemory(pid, arg(0), nfds * 8);
    if (!mem) return NOT_WAITING;
    for (let i = 0; i < nfds; i++) {
      const fd = mem.readInt32LE(i * 8);
      const events = mem.readInt16LE(i * 8 + 4);
      // POLLIN. poll's third argument is a timeout in ms (negative: forever); ppoll's is an address (NULL: forever).
      if (fd >= 0 && (events & 0x0001) !== 0 && isTty(fd)) return found(nr === POLL ? intArg(arg(2)) >= 0 : arg(2) !== 0n);
    }
    return NOT_WAITING;
  }
  if (table.epoll.includes(nr)) {
    try {
      const info = readFileSync(`/proc/${pid}/fdinfo/${Number(arg(0))}`, 'latin1');
      for (const m of info.matchAll(/^tfd:\s+(\d+)\s+events:\s+([0-9a-f]+)/gm)) {
        // epoll_wait and epoll_pwait: a timeout in ms (negative: forever); epoll_pwait2: an address (NULL: forever).
        if ((parseInt(m[2], 16) & 0x0001) !== 0 && isTty(Number(m[1]))) return found(nr === EPOLL_PWAIT2 ? arg(3) !== 0n : intArg(arg(3)) >= 0);
      }
    } catch {
      return NOT_WAITING;
    }
  }
  return NOT_WAITING;
}

function readMemory(pid: number, address: bigint, length: number): Buffer | null {
  if (length <= 0) return null;
  let fd: number | null = null;
  try {
    fd = openSync(`/proc/${pid}/mem`, 'r');
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, address);
    return n === length ? buf : null;
  } catch {
    return null;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
