import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Facts about processes, read from the kernel (/proc). Nothing here guesses: a process is named by its
 * pid *and* its start time, so a pid the kernel reused for someone else's process is never touched.
 */
export interface ProcStat {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** Foreground process group of the process's controlling terminal (-1 when it has none). */
  tpgid: number;
  /** Clock ticks since boot; with the pid it identifies one process for its whole life. */
  startTime: number;
  /** How many threads it has. */
  threads: number;
}

export const hasProcfs = ((): boolean => {
  try {
    readFileSync('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
})();

export function readStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  return parseStat(pid, text);
}

/** The terminal a process has on its stdin (/dev/pts/N), or null (pipes, a process that is gone). */
export function terminalOf(pid: number): string | null {
  try {
    const path = readlinkSync(`/proc/${pid}/fd/0`);
    return path.startsWith('/dev/') ? path : null;
  } catch {
    return null;
  }
}

/** /proc/<pid>/stat's text as a ProcStat (null when it is not one). */
export function parseStat(pid: number, text: string): ProcStat | null {
  // comm may hold spaces and parentheses: it runs from the first '(' to the last ')'.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < 0) return null;
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3 (state); field N is rest[N - 3].
  return {
    pid,
    comm: text.slice(open + 1, close),
    state: rest[0],
    ppid: Number(rest[1]),
    pgrp: Number(rest[2]),
    session: Number(rest[3]),
    tpgid: Number(rest[5]),
    threads: Number(rest[17]),
    startTime: Number(rest[19]),
  };
}

/**
 * The kernel allocates pids in increasing order until it wraps at pid_max: a process younger than
 * another has a larger pid, unless the counter wrapped in between. PidClock tells whether it did, by
 * sampling the last pid allocated (/proc/loadavg) often enough that a whole cycle cannot pass unseen
 * (a wrap needs pid_max forks, at least 32,768; no machine forks that many in SampleMs).
 */
export class PidClock {
  static readonly SampleMs = 1000;
  private last = lastPidAllocated() ?? 0;
  private wrapCount = 0;
  private timer: NodeJS.Timeout | null = null;

  /** Wraps seen so far (sampling starts on first use). */
  get wraps(): number {
    this.sample();
    if (!this.timer) {
      this.timer = setInterval(() => this.sample(), PidClock.SampleMs);
      this.timer.unref();
    }
    return this.wrapCount;
  }

  private sample(): void {
    const now = lastPidAllocated();
    if (now === null) return;
    if (now < this.last) this.wrapCount++;
    this.last = now;
  }
}

export const pidClock = new PidClock();

/** The last pid the kernel allocated, or null without /proc. */
export function lastPidAllocated(): number | null {
  try {
    const n = Number(readFileSync('/proc/loadavg', 'latin1').trim().split(' ')[4]);
    return Number.isInteger(n) ? n : null;
  } catch {
    return null;
  }
}

export function allPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return [];
  }
}

export function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const pid of allPids()) {
    const s = readStat(pid);
    if (s) out.push(s);
  }
  return out;
}

/** The terminal's foreground process group as the shell sees it now, or null when unknown. */
export function foregroundPgid(shellPid: number): number | null {
  const s = readStat(shellPid);
  if (!s || s.tpgid <= 0) return null;
  return s.tpgid;
}

export function isAlive(p: { pid: number; startTime: number }): boolean {
  const s = readStat(p.pid);
  // A zombie has exited; only its parent's wait is missing.
  return s !== null && s.startTime === p.startTime && s.state !== 'Z' && s.state !== 'X';
}

/** Sends `signal` to a process only if it is still the very process we recorded. */
export function signalExact(p: { pid: number; startTime: number }, signal: NodeJS.Signals): boolean {
  if (hasProcfs && !isAlive(p)) return false;
  try {
    process.kill(p.pid, signal);
    return true;
  } catch {
    return false;
  }
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** True when /proc/<pid>/environ holds `NAME=value` exactly. Unreadable (other users') processes are never ours. */
export function environHas(pid: number, entry: Buffer): boolean {
  let env: Buffer;
  try {
    env = readFileSync(`/proc/${pid}/environ`);
  } catch {
    return false;
  }
  let from = 0;
  for (;;) {
    const i = env.indexOf(entry, from);
    if (i < 0) return false;
    const before = i === 0 || env[i - 1] === 0;
    const after = i + entry.length === env.length || env[i + entry.length] === 0;
    if (before && after) return true;
    from = i + 1;
  }
}

export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}
