import type { Actor, TerminalAction } from './actor';

/**
 * Who may change a session. A person watching a session chooses one of three modes:
 *   watch    — the viewer's keyboard sends nothing; the agent works alone (the default for an agent's session)
 *   type     — the viewer's keyboard goes in beside the agent's input
 *   takeover — the person holds the floor: every agent action that changes the terminal (input, exec,
 *              send, signal, resize, close) is refused until release; reads still work
 *
 * The floor governs agents and the viewer's keyboard. It never refuses the person's own credential:
 * a call made with it is the person acting, whatever the mode (the viewer's socket applies watch mode to
 * the keyboard itself). ptydeck's own actions (^C on a timeout) always go.
 * Writes are never interleaved inside one write: each is a single call on the backend, in arrival order.
 */
export type FloorMode = 'watch' | 'type' | 'takeover';
export type Controller = 'agent' | 'person';

export const FLOOR_HELD_MESSAGE =
  'A person has taken control of this session: agents may not type, run commands, signal, resize or close it until they release it (reads still work)';

export class FloorRefusedError extends Error {
  constructor(readonly action: TerminalAction) {
    super(FLOOR_HELD_MESSAGE);
    this.name = 'FloorRefusedError';
  }
}

/** Agents refused since the person took the floor, by name: what the viewer shows on the floor strip. */
export interface RefusalTally {
  count: number;
  byAgent: Record<string, { count: number; actions: TerminalAction[]; last: string }>;
}

export class Floor {
  private tally: RefusalTally = { count: 0, byAgent: {} };

  constructor(private current: FloorMode) {}

  get mode(): FloorMode {
    return this.current;
  }

  get controller(): Controller {
    return this.current === 'takeover' ? 'person' : 'agent';
  }

  get refusals(): RefusalTally {
    return this.tally;
  }

  set(mode: FloorMode): boolean {
    if (mode === this.current) return false;
    // The count is "since the floor was taken": a new takeover starts it again.
    if (mode === 'takeover') this.tally = { count: 0, byAgent: {} };
    this.current = mode;
    return true;
  }

  /** Whether `actor` may do `action` now; a refusal is counted. */
  allows(actor: Actor, action: TerminalAction): boolean {
    if (actor.kind !== 'agent' || this.current !== 'takeover') return true;
    const entry = (this.tally.byAgent[actor.name] ??= { count: 0, actions: [], last: '' });
    entry.count++;
    if (!entry.actions.includes(action)) entry.actions.push(action);
    entry.last = new Date().toISOString();
    this.tally.count++;
    return false;
  }
}
