import type { PersonPresence } from '../presence';
import type { SessionManager } from '../terminal/manager';
import type { Session } from '../terminal/session';

/**
 * The floor lease: the person holds a session's floor only while some viewer of theirs is connected.
 * When none has been for the lease (PTYDECK_FLOOR_LEASE_SECS), the floor goes back to the agent, with a
 * reason the tab and the agent can read. Without it a floor taken over and then left (the page closed,
 * the server restarted with a durable session held) locks the agent out for good.
 *
 * While the lease runs, each held session lists when it ends (`floorLeaseExpiresAt`); a viewer coming
 * back stops it. Sessions taken back after a restart are looked at when the lease starts.
 */
export const LEASE_DOOR = 'floor-lease';

export class FloorLease {
  private readonly timers = new Map<Session, NodeJS.Timeout>();
  private readonly offs: (() => void)[];

  constructor(
    private readonly manager: SessionManager,
    private readonly presence: PersonPresence,
    private readonly leaseMs: number,
  ) {
    this.offs = [
      presence.events.on('change', () => this.reviewAll()),
      manager.events.on('created', (s) => this.review(s)),
      manager.events.on('changed', (s) => this.review(s)),
      manager.events.on('closed', ({ session }) => this.clear(session)),
    ];
    this.reviewAll();
  }

  get seconds(): number {
    return Math.round(this.leaseMs / 1000);
  }

  private reviewAll(): void {
    for (const s of this.manager.list()) this.review(s);
  }

  private review(s: Session): void {
    const held = s.floor.mode === 'takeover' && !s.closed;
    if (!held || this.presence.count > 0) {
      this.clear(s);
      return;
    }
    if (this.timers.has(s)) return;
    const expiresAt = Date.now() + this.leaseMs;
    const timer = setTimeout(() => this.expire(s), this.leaseMs);
    timer.unref();
    this.timers.set(s, timer);
    s.setFloorLease(expiresAt);
  }

  private clear(s: Session): void {
    const timer = this.timers.get(s);
    if (!timer) return;
    clearTimeout(timer);
    this.timers.delete(s);
    s.setFloorLease(null);
  }

  private expire(s: Session): void {
    this.timers.delete(s);
    if (s.closed || s.floor.mode !== 'takeover' || this.presence.count > 0) return;
    s.setFloor(
      'watch',
      { kind: 'system', door: LEASE_DOOR },
      `The floor returned to the agent: no viewer of the person was connected for ${this.seconds} s (floor lease)`,
    );
  }

  stop(): void {
    this.offs.forEach((off) => off());
    for (const [s, timer] of this.timers) {
      clearTimeout(timer);
      s.setFloorLease(null);
    }
    this.timers.clear();
  }
}
