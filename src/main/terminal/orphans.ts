import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, readStat, signalExact } from './processes';
import type { ProcessTracker } from './process-tracking';
import { snapshotMembers } from './teardown';

/**
 * Native sessions die with the server that runs them (tmux sessions are meant to outlive it). A server
 * killed with SIGKILL cannot end them, so while a native session runs, what is needed to find its
 * processes (its cgroup, its environment tag, its shell's start time) is recorded here, in the state
 * directory, with the server's own pid and start time. The next start ends what a dead server left;
 * records of a server that is still alive (another ptydeck on the same home) are left alone.
 */
export interface NativeSessionRecord {
  sessionId: string;
  server: { pid: number; startTime: number };
  envTag: string;
  /** Clock ticks at the shell's start: nothing older can carry its environment tag. */
  notBefore: number | null;
  cgroup: string | null;
}

const FILE = 'native-sessions.json';

/** How long the next start waits for a dead server's processes to go after KILL, at most. */
const ReapWaitMs = 2000;
const ReapPollMs = 25;

const recordKey = (r: NativeSessionRecord): string => `${r.sessionId}\0${r.server.pid}\0${r.server.startTime}`;

export class NativeSessionRecords {
  private readonly path: string;
  private readonly self: { pid: number; startTime: number };

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.path = join(dir, FILE);
    this.self = { pid: process.pid, startTime: readStat(process.pid)?.startTime ?? 0 };
  }

  add(r: Omit<NativeSessionRecord, 'server'>): void {
    this.write([...this.load().filter((x) => x.sessionId !== r.sessionId || !this.isMine(x)), { ...r, server: this.self }]);
  }

  remove(sessionId: string): void {
    const all = this.load();
    const kept = all.filter((x) => x.sessionId !== sessionId || !this.isMine(x));
    if (kept.length !== all.length) this.write(kept);
  }

  /**
   * Ends every process a dead server's native sessions left, and forgets those records. Returns how
   * many processes were signalled.
   */
  async reapDead(tracker: ProcessTracker): Promise<number> {
    const all = this.load();
    const dead = all.filter((r) => !this.isMine(r) && !isAlive({ pid: r.server.pid, startTime: r.server.startTime }));
    if (!dead.length) return 0;
    let signalled = 0;
    const waiting: (() => boolean)[] = [];
    for (const r of dead) {
      const group = tracker.open(r.cgroup);
      group.killAll();
      const members = snapshotMembers({ shellPid: -1, envTag: r.envTag, notBefore: r.notBefore ?? undefined, group });
      for (const m of members) if (signalExact(m, 'SIGKILL')) signalled++;
      signalled += group.pids().length;
      waiting.push(() => group.isEmpty() && members.every((m) => !isAlive(m)) && group.remove());
    }
    const deadline = Date.now() + ReapWaitMs;
    while (waiting.some((done) => !done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, ReapPollMs));
    const gone = new Set(dead.map(recordKey));
    this.write(this.load().filter((r) => !gone.has(recordKey(r))));
    return signalled;
  }

  private isMine(r: NativeSessionRecord): boolean {
    return r.server.pid === this.self.pid && r.server.startTime === this.self.startTime;
  }

  private load(): NativeSessionRecord[] {
    try {
      const data = JSON.parse(readFileSync(this.path, 'utf8')) as { version: number; sessions: NativeSessionRecord[] };
      return data.version === 1 && Array.isArray(data.sessions) ? data.sessions : [];
    } catch {
      return [];
    }
  }

  private write(sessions: NativeSessionRecord[]): void {
    const tmp = `${this.path}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, JSON.stringify({ version: 1, sessions }, null, 2) + '\n', { mode: 0o600 });
      renameSync(tmp, this.path);
    } catch (err) {
      // The state directory may be gone (removed by hand, a test's temporary home): sessions run on;
      // only the cleanup after a crash is at risk, which is worth a warning, not a crash.
      console.warn(`ptydeck: could not record native sessions in ${this.path}: ${(err as Error).message}`);
    }
  }
}
