import type { RemoteStatus, SessionSummary, ViewerEvent } from '../../../shared/types';
import { hasBridgeToken, wsUrl } from '../api/connection';
import { ReconnectingSocket, type SocketDown } from '../api/reconnecting-socket';
import { redeemLoginLink } from '../api/login-link';
import { api } from '../api/rest';
import { deliver } from '../notifications/deliver';
import { attentionFor } from '../notifications/transitions';

/**
 * The session list, as the events socket pushes it. Nothing polls: `hello` replaces the whole list
 * (also after a reconnect), `session` replaces one entry, `closed` drops one.
 */
export type Link =
  /** First contact, before we know whether we are logged in. */
  | { state: 'connecting' }
  | { state: 'live' }
  | { state: 'down'; attempt: number; retryAt: number; reason: string }
  | { state: 'login'; message: string | null };

export interface SessionState {
  link: Link;
  principal: string | null;
  /** False until the first `hello`: "no sessions" is only true once the server has said so. */
  loaded: boolean;
  sessions: ReadonlyMap<string, SessionSummary>;
  /** Other servers this deck shows (remotes/): their state, as the events socket reports it. */
  remotes: readonly RemoteStatus[];
}

type Listener = () => void;

export class SessionStore {
  private state: SessionState = { link: { state: 'connecting' }, principal: null, loaded: false, sessions: new Map(), remotes: [] };
  private readonly listeners = new Set<Listener>();
  private socket: ReconnectingSocket | null = null;
  /** Guards against stale answers when start() runs again (after a login, say). */
  private generation = 0;
  /** Sessions the socket said are gone (until it reports one of that id again: ids may be reused). */
  private readonly closed = new Set<string>();

  readonly subscribe = (l: Listener): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };

  readonly getSnapshot = (): SessionState => this.state;

  /** Sign in with a login link if the page was opened with one, check the credential, then open the events socket. */
  async start(): Promise<void> {
    const gen = ++this.generation;
    this.socket?.stop();
    this.socket = null;
    const refused = await redeemLoginLink();
    if (gen !== this.generation) return;
    try {
      const me = await api.loginState();
      if (gen !== this.generation) return;
      if (!me.signedIn && !hasBridgeToken()) {
        this.set({ link: { state: 'login', message: refused } });
        return;
      }
      if (me.signedIn) this.set({ principal: me.principal });
      this.openEvents(gen);
    } catch {
      if (gen !== this.generation) return;
      // Unreachable (or an odd answer): the events socket's backoff does the retrying.
      this.openEvents(gen);
    }
  }

  stop(): void {
    this.generation++;
    this.socket?.stop();
    this.socket = null;
  }

  retryNow(): void {
    this.socket?.retryNow();
  }

  /** A REST answer (floor change, creation) is newer than what the socket last said: show it at once. */
  upsert(s: SessionSummary): void {
    // ...unless the socket has meanwhile said the session is gone.
    if (this.closed.has(s.id)) return;
    const sessions = new Map(this.state.sessions);
    sessions.set(s.id, s);
    this.set({ sessions });
  }

  remove(id: string): void {
    if (!this.state.sessions.has(id)) return;
    const sessions = new Map(this.state.sessions);
    sessions.delete(id);
    this.set({ sessions });
  }

  private openEvents(gen: number): void {
    const socket = new ReconnectingSocket(() => wsUrl('/api/events'), {
      onMessage: (data) => {
        if (typeof data !== 'string') return;
        let event: ViewerEvent;
        try {
          event = JSON.parse(data) as ViewerEvent;
        } catch {
          return;
        }
        this.apply(event);
        if (this.state.link.state !== 'live') {
          socket.markHealthy();
          this.set({ link: { state: 'live' } });
        }
      },
      onDown: (down) => void this.wentDown(gen, down),
    });
    this.socket = socket;
    socket.start();
  }

  private async wentDown(gen: number, down: SocketDown): Promise<void> {
    const reason = 'Server unreachable';
    this.set({ link: { state: 'down', attempt: down.attempt, retryAt: down.retryAt, reason } });
    // A socket refused at the upgrade looks the same as a dead server; ask over HTTP which it is.
    try {
      const me = await api.loginState();
      if (gen !== this.generation) return;
      if (!me.signedIn && !hasBridgeToken()) {
        this.stop();
        this.set({ link: { state: 'login', message: 'The server no longer accepts this browser’s login (was it restarted with a new token?). Paste the admin token again.' } });
      } else if (this.state.link.state === 'down') {
        this.set({ link: { ...this.state.link, reason: 'Live updates interrupted' } });
      }
    } catch {
      // Unreachable: the socket's backoff goes on.
    }
  }

  private apply(e: ViewerEvent): void {
    switch (e.type) {
      case 'hello':
        this.closed.clear();
        this.set({ principal: e.principal, loaded: true, sessions: new Map(e.sessions.map((s) => [s.id, s])) });
        return;
      case 'session': {
        this.closed.delete(e.session.id);
        for (const a of attentionFor(this.state.sessions.get(e.session.id), e.session)) deliver(a);
        const sessions = new Map(this.state.sessions);
        sessions.set(e.session.id, e.session);
        this.set({ sessions });
        return;
      }
      case 'closed':
        this.closed.add(e.id);
        this.remove(e.id);
        return;
      case 'remotes':
        this.set({ remotes: e.remotes });
        return;
    }
  }

  private set(patch: Partial<SessionState>): void {
    this.state = { ...this.state, ...patch };
    for (const l of this.listeners) l();
  }
}
