import type { Approval, ApprovalsFrame, Policy } from '../../../shared/approvals';
import { wsUrl } from '../api/connection';
import { ReconnectingSocket } from '../api/reconnecting-socket';
import { deliver } from '../notifications/deliver';

/**
 * Commands that wait for the person, and the policy, as the approvals socket pushes them
 * (/api/approvals/events). Nothing polls. A command that starts waiting while the viewer is connected
 * is news (a desktop notification); what waits already when it (re)connects is shown, not announced.
 */
export interface ApprovalsState {
  live: boolean;
  approvals: readonly Approval[];
  policy: Policy | null;
}

type Listener = () => void;

export class ApprovalsStore {
  private state: ApprovalsState = { live: false, approvals: [], policy: null };
  private readonly listeners = new Set<Listener>();
  private socket: ReconnectingSocket | null = null;
  private seen = new Set<string>();
  /** The first list after each (re)connect is the starting point, not news. */
  private fresh = true;
  /** Whether a list has arrived since the page loaded: what waits when the page opens is shown at once. */
  private loaded = false;
  private readonly arrivedListeners = new Set<(a: Approval) => void>();

  readonly subscribe = (l: Listener): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };

  readonly getSnapshot = (): ApprovalsState => this.state;

  /** Called for each approval that starts waiting while connected (the panel opens for it). */
  onArrived(l: (a: Approval) => void): () => void {
    this.arrivedListeners.add(l);
    return () => this.arrivedListeners.delete(l);
  }

  /** Opens the socket; once open, it reconnects by itself (a second call changes nothing). */
  start(): void {
    if (this.socket) return;
    const socket = new ReconnectingSocket(() => wsUrl('/api/approvals/events'), {
      onOpen: () => {
        this.fresh = true;
      },
      onMessage: (data) => {
        if (typeof data !== 'string') return;
        let frame: ApprovalsFrame;
        try {
          frame = JSON.parse(data) as ApprovalsFrame;
        } catch {
          return;
        }
        socket.markHealthy();
        this.apply(frame);
      },
      onDown: () => this.set({ live: false }),
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

  /** A decision made here: drop the card at once rather than wait for the socket to say so. */
  settled(id: string): void {
    this.set({ approvals: this.state.approvals.filter((a) => a.id !== id) });
  }

  private apply(f: ApprovalsFrame): void {
    if (f.type === 'policy') {
      this.set({ policy: f.policy, live: true });
      return;
    }
    const news = this.fresh ? [] : f.approvals.filter((a) => !this.seen.has(a.id));
    // A command already waiting when the page opens is not announced (it was announced to whoever was
    // watching), but the queue opens on it: it waits for this person, and a closed panel would hide it.
    const waitingAtLoad = !this.loaded && f.approvals.length > 0 ? f.approvals[0] : null;
    this.fresh = false;
    this.loaded = true;
    this.seen = new Set(f.approvals.map((a) => a.id));
    this.set({ approvals: f.approvals, live: true });
    if (waitingAtLoad) for (const l of this.arrivedListeners) l(waitingAtLoad);
    for (const a of news) {
      deliver({ key: `approval:${a.id}`, sessionId: a.session_id, title: `Approve? ${a.agent} wants to run a command`, body: `${a.command} — terminal ${a.session_id.slice(0, 8)}, in ${a.cwd}` });
      for (const l of this.arrivedListeners) l(a);
    }
  }

  private set(patch: Partial<ApprovalsState>): void {
    this.state = { ...this.state, ...patch };
    for (const l of this.listeners) l();
  }
}

/** Pending approvals per session id, for tabs and headers. */
export function countBySession(approvals: readonly Approval[]): ReadonlyMap<string, number> {
  const m = new Map<string, number>();
  for (const a of approvals) m.set(a.session_id, (m.get(a.session_id) ?? 0) + 1);
  return m;
}
