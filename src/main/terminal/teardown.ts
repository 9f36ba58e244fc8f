import { TeardownConstants } from './constants';
import { allPids, allStats, commandLine, environHas, hasProcfs, isAlive, lastPidAllocated, pidClock, readStat, signalExact, type ProcStat } from './processes';
import type { ProcessGroup } from './process-tracking';

/**
 * Ending a session's whole process tree, and proving it ended.
 *
 * What belongs to a session: everything in its cgroup (process-tracking.ts: what no process can leave),
 * and besides, the shell, everything descended from it, everything still in its POSIX session, and
 * everything that carries the session's environment tag (what remains where no cgroup could be made).
 * Each member is recorded with its start time.
 *
 * The order is: snapshot, TERM (HUP for the shell, which ignores TERM when interactive), wait up to the
 * grace period, rescan for children forked meanwhile, KILL what is left, verify, report survivors.
 */
export interface TreeRoot {
  shellPid: number;
  /** `NAME=value` placed in the shell's environment at spawn. */
  envTag: string;
  /** The shell's start time (clock ticks): nothing older can carry its environment tag. */
  notBefore?: number;
  /**
   * The pid clock when the shell started: with no wrap since, everything that can belong to the
   * session has a pid at or above the shell's, and only those need reading (not the whole machine).
   */
  pidMark?: { pid: number; wraps: number };
  /** The session's process group (a cgroup where the machine allows one). */
  group?: ProcessGroup;
}

export interface Member {
  pid: number;
  startTime: number;
}

export interface TeardownReport {
  /** Processes signalled. */
  signalled: number;
  /** Processes still alive after KILL (should be none): pid and command line. */
  survivors: { pid: number; command: string }[];
  /**
   * What found the members: 'cgroup2'/'cgroup1' (the kernel's list, which no process can leave) or
   * 'environment' (tree, session and environment tag: a process that sheds all three is not found).
   */
  trackedBy: 'cgroup2' | 'cgroup1' | 'environment';
}

/**
 * The processes that can belong to `root`: those started after its shell. Without a pid wrap since the
 * shell started that is every pid at or above the shell's (`from`); otherwise, every process.
 */
function candidatePids(root: TreeRoot, newerThan?: number): number[] {
  const pids = allPids();
  const last = lastPidAllocated();
  if (last === null) return pids;
  let lo = 0;
  const mark = root.pidMark;
  if (mark && pidClock.wraps === mark.wraps && last >= mark.pid) lo = mark.pid;
  if (newerThan !== undefined && last >= newerThan) lo = Math.max(lo, newerThan + 1);
  return lo > 0 ? pids.filter((p) => p >= lo) : pids;
}

/** The candidates' stats, read in slices that yield to the event loop (a machine may run thousands). */
async function statsYielding(pids: number[]): Promise<ProcStat[]> {
  const out: ProcStat[] = [];
  for (let i = 0; i < pids.length; i += ScanSliceSize) {
    for (const pid of pids.slice(i, i + ScanSliceSize)) {
      const s = readStat(pid);
      if (s) out.push(s);
    }
    if (i + ScanSliceSize < pids.length) await new Promise((r) => setImmediate(r));
  }
  return out;
}

const ScanSliceSize = 256;

export function snapshotMembers(root: TreeRoot, known: Member[] = []): Member[] {
  return hasProcfs ? membersOf(root, allStats(), known) : [];
}

/**
 * The members of `root`'s tree. `newerThan`: only processes whose pid was allocated after it can be new
 * members (a rescan after an earlier snapshot); `known` members are looked at again whatever their pid.
 */
export async function snapshotMembersAsync(root: TreeRoot, known: Member[] = [], newerThan?: number): Promise<Member[]> {
  if (!hasProcfs) return [];
  const pids = new Set(candidatePids(root, newerThan));
  for (const k of known) pids.add(k.pid);
  for (const p of root.group?.pids() ?? []) pids.add(p);
  if (root.shellPid > 0) pids.add(root.shellPid);
  return membersOf(root, await statsYielding([...pids]), known);
}

function membersOf(root: TreeRoot, stats: ProcStat[], known: Member[]): Member[] {
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) {
    const list = children.get(s.ppid);
    if (list) list.push(s);
    else children.set(s.ppid, [s]);
  }
  const members = new Map<number, Member>();
  const add = (s: ProcStat): void => {
    if (s.pid === process.pid || s.pid <= 1 || members.has(s.pid) || s.state === 'Z') return;
    members.set(s.pid, { pid: s.pid, startTime: s.startTime });
  };
  const shell = byPid.get(root.shellPid);
  const roots: ProcStat[] = [];
  if (shell) roots.push(shell);
  // The cgroup's members, whatever they did to their parent, session or environment.
  for (const pid of root.group?.pids() ?? []) {
    const s = byPid.get(pid);
    if (s) roots.push(s);
  }
  // Earlier members are roots too: their children forked during shutdown must be found.
  for (const k of known) {
    const s = byPid.get(k.pid);
    if (s && s.startTime === k.startTime) roots.push(s);
  }
  const stack = [...roots];
  while (stack.length) {
    const s = stack.pop()!;
    add(s);
    for (const c of children.get(s.pid) ?? []) if (!members.has(c.pid)) stack.push(c);
  }
  const tag = Buffer.from(root.envTag);
  const notBefore = root.notBefore ?? shell?.startTime ?? 0;
  for (const s of stats) {
    if (members.has(s.pid) || s.pid === process.pid) continue;
    const inSession = shell !== undefined && s.session === shell.session && shell.session === shell.pid;
    // Only a process started after the shell can carry its tag: the environment of older ones is not read.
    if (inSession || (s.startTime >= notBefore && environHas(s.pid, tag))) {
      add(s);
      for (const c of children.get(s.pid) ?? []) stack.push(c);
    }
  }
  while (stack.length) {
    const s = stack.pop()!;
    add(s);
    for (const c of children.get(s.pid) ?? []) if (!members.has(c.pid)) stack.push(c);
  }
  return [...members.values()];
}

export interface TeardownOptions {
  graceMs?: number;
  pollMs?: number;
  /** Called to end the shell itself the backend's way (node-pty closes the terminal with SIGHUP). */
  killShell?: () => void;
}

export async function teardownTree(root: TreeRoot, opts: TeardownOptions = {}): Promise<TeardownReport> {
  const graceMs = opts.graceMs ?? TeardownConstants.GraceMs;
  const pollMs = opts.pollMs ?? TeardownConstants.PollMs;
  const group = root.group;
  const trackedBy = group?.kind ?? 'environment';
  if (!hasProcfs) {
    // Without /proc we cannot enumerate; the backend's own kill (HUP to the terminal) is what we have.
    opts.killShell?.();
    group?.killAll();
    return { signalled: 1, survivors: [], trackedBy };
  }
  if (group && group.kind !== 'environment') return teardownGroup(root, group, graceMs, pollMs, opts.killShell);
  const groupEmpty = (): boolean => group?.isEmpty() ?? true;
  const scannedUpTo = lastPidAllocated() ?? undefined;
  const wrapsAtScan = pidClock.wraps;
  let members = await snapshotMembersAsync(root);
  const signalled = new Set<string>();
  const key = (m: Member): string => `${m.pid}:${m.startTime}`;
  for (const m of members) {
    if (m.pid === root.shellPid) continue;
    if (signalExact(m, 'SIGTERM')) signalled.add(key(m));
  }
  const shell = members.find((m) => m.pid === root.shellPid);
  if (shell && signalExact(shell, 'SIGHUP')) signalled.add(key(shell));
  opts.killShell?.();

  await waitUntil(() => members.every((m) => !isAlive(m)) && groupEmpty(), graceMs, pollMs);
  // Children forked meanwhile have pids allocated after the first scan (unless the counter wrapped,
  // which candidatePids notices): only those are read again.
  const wrapped = scannedUpTo === undefined || pidClock.wraps !== wrapsAtScan;
  members = (await snapshotMembersAsync(root, members, wrapped ? undefined : scannedUpTo)).concat(members.filter((m) => isAlive(m)));
  let killed = 0;
  for (const m of members) {
    if (!isAlive(m)) continue;
    if (signalExact(m, 'SIGKILL')) {
      signalled.add(key(m));
      killed++;
    }
  }
  if (!groupEmpty()) {
    // Whatever is still in the cgroup (forked after the rescan, or found by nothing else) dies at once.
    killed += group!.pids().length;
    group!.killAll();
  }
  let late: Member[] = [];
  if (killed > 0) {
    await waitUntil(() => members.every((m) => !isAlive(m)) && groupEmpty(), 1000, pollMs);
    // One last sweep: something may have forked between the rescan and the KILL. (When nothing needed
    // a KILL, the rescan found everything already gone, and there is no such window.)
    late = await snapshotMembersAsync(root, members.filter((m) => isAlive(m)));
    for (const m of late) if (signalExact(m, 'SIGKILL')) signalled.add(key(m));
    if (late.length) await waitUntil(() => late.every((m) => !isAlive(m)), 1000, pollMs);
  }
  // Survivors: what our own scan still sees alive, and whatever the kernel still lists in the cgroup.
  const alive = [...members, ...late].filter((m, i, all) => all.findIndex((o) => o.pid === m.pid) === i && isAlive(m)).map((m) => m.pid);
  const listed = group?.pids() ?? [];
  const survivors = [...new Set([...alive, ...listed])].map((pid) => ({ pid, command: commandLine(pid) }));
  if (survivors.length === 0) group?.remove();
  return { signalled: signalled.size, survivors, trackedBy };
}

/**
 * With a cgroup the kernel lists every member, whatever it forked, whichever session or environment it
 * took: nothing else needs scanning, so closing reads a few files instead of every process on the machine.
 * (A process can leave its cgroup only by writing another cgroup's procs file, which takes privileges
 * over both; with those it could as well have killed the server.)
 */
async function teardownGroup(root: TreeRoot, group: ProcessGroup, graceMs: number, pollMs: number, killShell?: () => void): Promise<TeardownReport> {
  const kind = group.kind as 'cgroup2' | 'cgroup1';
  const members: Member[] = [];
  for (const pid of new Set([...group.pids(), ...(root.shellPid > 0 ? [root.shellPid] : [])])) {
    const s = readStat(pid);
    if (s && s.state !== 'Z' && pid !== process.pid) members.push({ pid, startTime: s.startTime });
  }
  let signalled = 0;
  const shell = members.find((m) => m.pid === root.shellPid);
  for (const m of members) if (m !== shell && signalExact(m, 'SIGTERM')) signalled++;
  if (shell && signalExact(shell, 'SIGHUP')) signalled++;
  killShell?.();
  const gone = (): boolean => group.isEmpty() && (!shell || !isAlive(shell));
  await waitUntil(gone, graceMs, pollMs, group);
  if (!gone()) {
    // Forked during the grace, or ignoring TERM and HUP: all of it dies at once, and is waited for.
    signalled += group.pids().length;
    group.killAll();
    if (shell) signalExact(shell, 'SIGKILL');
    await waitUntil(gone, 1000, pollMs, group);
  }
  const alive = new Set(group.pids());
  if (shell && isAlive(shell)) alive.add(shell.pid);
  const survivors = [...alive].map((pid) => ({ pid, command: commandLine(pid) }));
  if (survivors.length === 0) group.remove();
  return { signalled, survivors, trackedBy: kind };
}

/** For process exit: no waiting, no promises; KILL everything we can name, now. */
export function killTreeSync(root: TreeRoot): void {
  for (const m of snapshotMembers(root)) signalExact(m, 'SIGKILL');
  root.group?.killAndRemoveSync();
}

/**
 * Polls `done` from 1 ms, doubling up to `pollMs`: a tree that dies at once is seen at once. A group
 * that can tell when it may have emptied (cgroup v2) also wakes the wait then, so the end of the last
 * member is seen when the kernel reports it rather than at the next poll.
 */
async function waitUntil(done: () => boolean, timeoutMs: number, pollMs: number, group?: ProcessGroup): Promise<void> {
  if (done()) return;
  const deadline = Date.now() + timeoutMs;
  let wake: (() => void) | null = null;
  const unwatch = group?.onMaybeEmptied(() => wake?.()) ?? (() => undefined);
  try {
    let wait = 1;
    while (!done() && Date.now() < deadline) {
      await new Promise<void>((r) => {
        const timer = setTimeout(r, wait);
        wake = () => {
          clearTimeout(timer);
          r();
        };
      });
      wake = null;
      wait = Math.min(wait * 2, pollMs);
    }
  } finally {
    unwatch();
  }
}
