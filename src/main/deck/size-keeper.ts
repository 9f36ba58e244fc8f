import { ADMIN } from '../api/auth';
import type { SessionManager } from '../terminal/manager';
import type { Session } from '../terminal/session';

/**
 * The agent's terminal keeps the agent's size. A person may fit an agent's terminal to their window
 * (the viewer's "Fit to my window"); when the floor goes back to watch (Release, a lease that ran out,
 * a resume), the size the agent had before is given back. An agent that resizes its terminal meanwhile
 * has chosen a new size, and that one stays.
 */
interface Sizes {
  current: { cols: number; rows: number };
  /** The agent's size before the person's first resize, while the person's size is in place. */
  agents: { cols: number; rows: number } | null;
}

export class SizeKeeper {
  private readonly sizes = new WeakMap<Session, Sizes>();
  private readonly offs: (() => void)[] = [];

  constructor(manager: SessionManager) {
    for (const s of manager.list()) this.follow(s);
    this.offs.push(manager.events.on('created', (s) => this.follow(s)));
  }

  private follow(s: Session): void {
    if (this.sizes.has(s)) return;
    const sizes: Sizes = { current: { cols: s.cols, rows: s.rows }, agents: null };
    this.sizes.set(s, sizes);
    const offResized = s.events.on('resized', ({ cols, rows, by }) => {
      // The person's own terminal has no agent whose size to keep.
      if (by.kind === 'person' && s.owner !== ADMIN.name) sizes.agents ??= sizes.current;
      else if (by.kind === 'agent') sizes.agents = null;
      sizes.current = { cols, rows };
    });
    const offFloor = s.events.on('floor', ({ mode }) => {
      if (mode !== 'watch' || !sizes.agents) return;
      const back = sizes.agents;
      sizes.agents = null;
      if (s.isAlive) s.resize(back.cols, back.rows, { kind: 'system', door: 'deck' });
    });
    const offClosed = s.events.on('closed', () => {
      offResized();
      offFloor();
      offClosed();
    });
  }

  stop(): void {
    this.offs.forEach((off) => off());
  }
}
