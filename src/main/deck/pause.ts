import type { PauseState } from '../../shared/types';
import { ADMIN } from '../api/auth';
import type { PersonPresence } from '../presence';
import { Emitter } from '../terminal/emitter';
import type { Actor } from '../terminal/actor';
import type { SessionManager } from '../terminal/manager';
import type { Session } from '../terminal/session';

/**
 * Pausing agents: the person takes over every session of one agent (or of all agents) at once, and
 * the ones that agent opens while paused too; resuming hands them all back. The floor does the
 * refusing (423 on every door); this only decides which sessions the person holds, and says why.
 *
 * A pause lasts while the person is here: when no viewer of theirs has been connected for the floor
 * lease, the pauses lift with it (the lease returns each held session by itself, see floor-lease.ts).
 */
export class Pauses {
  readonly events = new Emitter<{ change: PauseState }>();
  private all = false;
  private readonly agents = new Set<string>();
  private liftTimer: NodeJS.Timeout | null = null;
  private readonly offs: (() => void)[];

  constructor(
    private readonly manager: SessionManager,
    presence: PersonPresence,
    private readonly leaseMs: number,
  ) {
    this.offs = [
      manager.events.on('created', (s) => {
        if (this.isPaused(s.owner)) s.setFloor('takeover', { kind: 'system', door: 'deck' }, this.reason(s.owner));
      }),
      presence.events.on('change', (count) => this.presenceChanged(count)),
    ];
    this.presenceChanged(presence.count);
  }

  get state(): PauseState {
    return { all: this.all, agents: [...this.agents].sort() };
  }

  isPaused(owner: string): boolean {
    return owner !== ADMIN.name && (this.all || this.agents.has(owner));
  }

  /** Takes over every live session of `agent` (every agent's when null) and keeps new ones taken. */
  pause(agent: string | null, by: Actor): string[] {
    if (agent === null) this.all = true;
    else this.agents.add(agent);
    const ids: string[] = [];
    for (const s of this.sessionsOf(agent)) {
      s.setFloor('takeover', by, this.reason(s.owner));
      ids.push(s.id);
    }
    this.changed();
    return ids;
  }

  /** Hands back every session of `agent` (every agent's when null) that the person holds. */
  resume(agent: string | null, by: Actor): string[] {
    if (agent === null) {
      this.all = false;
      this.agents.clear();
    } else {
      if (this.all) {
        // Everyone was paused: everyone else stays so.
        this.all = false;
        for (const s of this.manager.list()) if (s.owner !== ADMIN.name && s.owner !== agent) this.agents.add(s.owner);
      }
      this.agents.delete(agent);
    }
    const ids: string[] = [];
    for (const s of this.sessionsOf(agent)) {
      if (s.floor.mode !== 'takeover') continue;
      s.setFloor('watch', by);
      ids.push(s.id);
    }
    this.changed();
    return ids;
  }

  /** Live sessions of `agent`, or of every agent (never the person's own). */
  sessionsOf(agent: string | null): Session[] {
    return this.manager.list().filter((s) => s.isAlive && s.owner !== ADMIN.name && (agent === null || s.owner === agent));
  }

  private reason(owner: string): string {
    return this.all ? `Paused by the person: every agent is stopped until they resume` : `Paused by the person: every terminal of ${owner} is held until they resume it`;
  }

  private presenceChanged(count: number): void {
    if (count > 0) {
      if (this.liftTimer) clearTimeout(this.liftTimer);
      this.liftTimer = null;
      return;
    }
    this.liftTimer ??= setTimeout(() => {
      this.liftTimer = null;
      if (!this.all && this.agents.size === 0) return;
      // The sessions themselves go back by their own leases; only the state lifts here.
      this.all = false;
      this.agents.clear();
      this.changed();
    }, this.leaseMs);
    this.liftTimer.unref();
  }

  private changed(): void {
    this.events.emit('change', this.state);
  }

  stop(): void {
    this.offs.forEach((off) => off());
    if (this.liftTimer) clearTimeout(this.liftTimer);
  }
}
