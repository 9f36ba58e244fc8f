import { TeardownConstants } from './constants';
import { allPids, allStats, commandLine, environHas, hasProcfs, isAlive, readStat, signalExact, type ProcStat } from './processes';

/**
 * Ending a session's whole process tree, and proving it ended.
 *
 * What belongs to a session: the shell, everything descended from it, everything still in its POSIX
 * session, and everything that carries the session's environment tag (a double-forked daemon escapes
 * the first two but keeps its environment). Each member is recorded with its start time.
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
}

/** Every process, read in slices that yield to the event loop (a machine may run thousands). */
async function allStatsYielding(): Promise<ProcStat[]> {
  const pids = allPids();
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

export async function snapshotMembersAsync(root: TreeRoot, known: Member[] = []): Promise<Member[]> {
  return hasProcfs ? membersOf(root, await allStatsYielding(), known) : [];
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
  if (!hasProcfs) {
    // Without /proc we cannot enumerate; the backend's own kill (HUP to the terminal) is what we have.
    opts.killShell?.();
    return { signalled: 1, survivors: [] };
  }
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

  await waitUntil(() => members.every((m) => !isAlive(m)), graceMs, pollMs);
  members = (await snapshotMembersAsync(root, members)).concat(members.filter((m) => isAlive(m)));
  let killed = 0;
  for (const m of members) {
    if (!isAlive(m)) continue;
    if (signalExact(m, 'SIGKILL')) {
      signalled.add(key(m));
      killed++;
    }
  }
  let late: Member[] = [];
  if (killed > 0) {
    await waitUntil(() => members.every((m) => !isAlive(m)), 1000, pollMs);
    // One last sweep: something may have forked between the rescan and the KILL. (When nothing needed
    // a KILL, the rescan found everything already gone, and there is no such window.)
    late = await snapshotMembersAsync(root, members.filter((m) => isAlive(m)));
    for (const m of late) if (signalExact(m, 'SIGKILL')) signalled.add(key(m));
    if (late.length) await waitUntil(() => late.every((m) => !isAlive(m)), 1000, pollMs);
  }
  const survivors = [...members, ...late]
    .filter((m, i, all) => all.findIndex((o) => o.pid === m.pid) === i && isAlive(m))
    .map((m) => ({ pid: m.pid, command: commandLine(m.pid) }));
  return { signalled: signalled.size, survivors };
}

/** For process exit: no waiting, no promises; KILL everything we can name, now. */
export function killTreeSync(root: TreeRoot): void {
  for (const m of snapshotMembers(root)) signalExact(m, 'SIGKILL');
}

async function waitUntil(done: () => boolean, timeoutMs: number, pollMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, pollMs));
}
