import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FloorMode } from './floor';

/**
 * What a restart needs to take a durable session back: id, owner, settings, and its marker nonce,
 * environment tag and cgroup. The tmux backend keeps these records in a file (DurableState); the PTY host keeps
 * them in its own memory, beside the terminal, which is exactly as long as they are worth anything.
 */
export interface SavedSession {
  id: string;
  owner: string;
  origin: string;
  cwd: string;
  cols: number;
  rows: number;
  createdAt: string;
  noChangeTimeoutSecs: number;
  retention?: 'persistent' | 'expiring';
  floor: FloorMode;
  nonce: string;
  envTag: string;
  /** The title set through the API (a program's window title is not kept: the program says it again). */
  title?: string | null;
  /** Its shell asks before running a line (line-gate-hook.ts), so an adopting server listens for it. */
  gateHook?: boolean;
  /** Runs one command instead of an interactive shell (execd's `command`): no markers to follow. */
  command?: string;
  /** The cgroup its processes are kept in (process-tracking.ts), when it has one. */
  cgroup?: string | null;
  /** The directory its shell's rc is in (kept by a gated shell), removed by whichever server closes it. */
  rcDir?: string;
}

/** True when `v` has the shape of a SavedSession (records come back from a file or another process). */
export function isSavedSession(v: unknown): v is SavedSession {
  const r = v as SavedSession;
  return (
    !!r &&
    typeof r === 'object' &&
    typeof r.id === 'string' &&
    typeof r.owner === 'string' &&
    typeof r.cwd === 'string' &&
    Number.isInteger(r.cols) &&
    Number.isInteger(r.rows) &&
    typeof r.nonce === 'string' &&
    typeof r.envTag === 'string'
  );
}

const FILE = 'tmux-sessions.json';

/**
 * The tmux backend's records: one JSON file beside the runtime file, written atomically (temporary
 * file, then rename), so a crash mid-write leaves the previous version, never half of one.
 */
export class DurableState {
  private readonly path: string;
  private pending: NodeJS.Timeout | null = null;
  private disposed = false;
  private latest: SavedSession[] = [];

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.path = join(dir, FILE);
  }

  load(): SavedSession[] {
    try {
      const data = JSON.parse(readFileSync(this.path, 'utf8')) as { version: number; sessions: unknown[] };
      return data.version === 1 && Array.isArray(data.sessions) ? data.sessions.filter(isSavedSession) : [];
    } catch {
      return [];
    }
  }

  /** Records `sessions` (all of them: the file is rewritten whole); coalesced, unless `now`. */
  save(sessions: SavedSession[], now = false): void {
    // A session that ends after the shutdown (its exit seen late) must not write into a home that may be gone.
    if (this.disposed) return;
    this.latest = sessions;
    if (now) {
      if (this.pending) clearTimeout(this.pending);
      this.pending = null;
      this.write();
      return;
    }
    this.pending ??= setTimeout(() => {
      this.pending = null;
      this.write();
    }, 100);
  }

  private write(): void {
    const tmp = `${this.path}.tmp`;
    try {
      writeFileSync(tmp, JSON.stringify({ version: 1, sessions: this.latest }, null, 2) + '\n', { mode: 0o600 });
      renameSync(tmp, this.path);
    } catch (err) {
      // The state directory may be gone (removed by hand, or a test's temporary home): the sessions run
      // on; only their adoption after a restart is at risk, which is worth a warning, not a crash.
      console.warn(`ptydeck: could not record tmux sessions in ${this.path}: ${(err as Error).message}`);
    }
  }

  /** No more writes (the manager is shutting down; the last save was synchronous). */
  dispose(): void {
    this.disposed = true;
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
  }
}
