import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FloorMode } from './floor';
import type { Session } from './session';

/**
 * What a restart needs to take back the tmux sessions: ids, owners, settings, and each one's marker
 * nonce and environment tag. One JSON file beside the runtime file, written atomically (temporary
 * file, then rename), so a crash mid-write leaves the previous version, never half of one.
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
}

const FILE = 'tmux-sessions.json';

export class DurableState {
  private readonly path: string;
  private pending: NodeJS.Timeout | null = null;
  private latest: Session[] = [];

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.path = join(dir, FILE);
  }

  load(): SavedSession[] {
    try {
      const data = JSON.parse(readFileSync(this.path, 'utf8')) as { version: number; sessions: SavedSession[] };
      return data.version === 1 && Array.isArray(data.sessions) ? data.sessions : [];
    } catch {
      return [];
    }
  }

  /** Records the tmux sessions among `sessions`; coalesced, unless `now`. */
  save(sessions: Session[], now = false): void {
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
    const sessions: SavedSession[] = [];
    for (const s of this.latest) {
      const identity = s.identity;
      if (!s.isTmux || s.closed || !identity) continue;
      sessions.push({
        id: s.id,
        owner: s.owner,
        origin: s.spec.origin,
        cwd: s.spec.cwd,
        cols: s.cols,
        rows: s.rows,
        createdAt: s.createdAt.toISOString(),
        noChangeTimeoutSecs: s.noChangeTimeoutSecs,
        retention: s.spec.retention,
        floor: s.floor.mode,
        nonce: identity.nonce,
        envTag: identity.envTag,
        title: s.title.source === 'set' ? s.title.title : null,
      });
    }
    const tmp = `${this.path}.tmp`;
    try {
      writeFileSync(tmp, JSON.stringify({ version: 1, sessions }, null, 2) + '\n', { mode: 0o600 });
      renameSync(tmp, this.path);
    } catch (err) {
      // The state directory may be gone (removed by hand, or a test's temporary home): the sessions run
      // on; only their adoption after a restart is at risk, which is worth a warning, not a crash.
      console.warn(`ptydeck: could not record tmux sessions in ${this.path}: ${(err as Error).message}`);
    }
  }

  /** No more writes (the manager is shutting down; the last save was synchronous). */
  dispose(): void {
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
  }
}
