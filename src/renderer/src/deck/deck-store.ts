import type { DeckClientFrame, DeckServerFrame, Glance, PauseState } from '../../../shared/types';
import { wsUrl } from '../api/connection';
import { ReconnectingSocket } from '../api/reconnecting-socket';

type Listener = () => void;

/**
 * The deck socket (/api/deck): who is paused, and glances (small renderings) of the screens the
 * overview shows. Glances are kept per session and each card listens to its own, so one busy terminal
 * re-renders one card, not the page.
 */
export class DeckStore {
  private socket: ReconnectingSocket | null = null;
  private paused: PauseState = { all: false, agents: [] };
  private readonly pauseListeners = new Set<Listener>();
  private readonly glances = new Map<string, Glance>();
  private readonly glanceListeners = new Map<string, Set<Listener>>();
  private wanted: string[] = [];

  start(): void {
    this.socket?.stop();
    const socket = new ReconnectingSocket(() => wsUrl('/api/deck'), {
      // A new socket knows nothing of what this page wants.
      onOpen: () => this.sendWanted(),
      onMessage: (data) => {
        if (typeof data !== 'string') return;
        let frame: DeckServerFrame;
        try {
          frame = JSON.parse(data) as DeckServerFrame;
        } catch {
          return;
        }
        socket.markHealthy();
        if (frame.type === 'deck') {
          this.paused = frame.paused;
          this.pauseListeners.forEach((l) => l());
        } else if (frame.type === 'glance') {
          this.glances.set(frame.glance.id, frame.glance);
          this.glanceListeners.get(frame.glance.id)?.forEach((l) => l());
        }
      },
    });
    this.socket = socket;
    socket.start();
  }

  stop(): void {
    this.socket?.stop();
    this.socket = null;
  }

  /** The events socket says the server is down (or back): follow it rather than knocking alone. */
  hold(held: boolean): void {
    this.socket?.hold(held);
  }

  readonly subscribePause = (l: Listener): (() => void) => {
    this.pauseListeners.add(l);
    return () => this.pauseListeners.delete(l);
  };

  readonly getPause = (): PauseState => this.paused;

  subscribeGlance(id: string, l: Listener): () => void {
    let set = this.glanceListeners.get(id);
    if (!set) this.glanceListeners.set(id, (set = new Set()));
    set.add(l);
    return () => set!.delete(l);
  }

  glance(id: string): Glance | undefined {
    return this.glances.get(id);
  }

  /** The sessions whose screens the page shows now ([] stops the glances). */
  want(ids: string[]): void {
    const next = [...ids].sort();
    if (next.join('\n') === this.wanted.join('\n')) return;
    this.wanted = next;
    for (const id of [...this.glances.keys()]) if (!next.includes(id)) this.glances.delete(id);
    this.sendWanted();
  }

  private sendWanted(): void {
    const frame: DeckClientFrame = { type: 'glances', ids: this.wanted };
    this.socket?.send(frame);
  }
}
