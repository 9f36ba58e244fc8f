import type { DeckClientFrame, DeckServerFrame, Glance, PauseState } from '../../../shared/types';
import { wsUrl } from '../api/connection';
import { ReconnectingSocket } from '../api/reconnecting-socket';

type Listener = () => void;

export const DeckTiming = {
  /**
   * Glances painted in one animation frame stop once this much of the frame is spent (at least one is
   * always painted): with many busy screens the page keeps its frame rate and a glance waits a frame
   * or two instead. A frame at 60 Hz is 16.7 ms; the rest is the page's own.
   */
  FrameBudgetMs: 8,
} as const;

/**
 * The deck socket (/api/deck): who is paused, and glances (small renderings) of the screens the
 * overview shows. Glances are kept per session and each card listens to its own, so one busy terminal
 * repaints one card, not the page; and glances are handed out at animation frames, within a budget
 * per frame (DeckTiming), so many busy screens never cost the page its frame rate.
 */
export class DeckStore {
  private socket: ReconnectingSocket | null = null;
  private paused: PauseState = { all: false, agents: [] };
  private readonly pauseListeners = new Set<Listener>();
  private readonly glances = new Map<string, Glance>();
  private readonly glanceListeners = new Map<string, Set<Listener>>();
  private wanted: string[] = [];
  private readonly arrived = new Set<string>();
  private frame = 0;

  /** Opens the socket; once open, it reconnects by itself (a second call changes nothing). */
  start(): void {
    if (this.socket) return;
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
          this.arrived.add(frame.glance.id);
          this.frame ||= requestAnimationFrame(() => this.handOut());
        }
      },
    });
    this.socket = socket;
    socket.start();
  }

  stop(): void {
    this.socket?.stop();
    this.socket = null;
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
  }

  private handOut(): void {
    this.frame = 0;
    const start = performance.now();
    // Oldest first; a session whose glance came again while it waited shows the newest one.
    for (const id of this.arrived) {
      this.arrived.delete(id);
      this.glanceListeners.get(id)?.forEach((l) => l());
      if (performance.now() - start >= DeckTiming.FrameBudgetMs) break;
    }
    if (this.arrived.size) this.frame = requestAnimationFrame(() => this.handOut());
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
