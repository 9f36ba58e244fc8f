import type { RemoteStatus, SessionSummary, ViewerEvent } from '../../shared/types';
import type { ElsewhereRoute, SessionsElsewhere } from '../api/server';
import { AioRemote } from './aio-remote';
import { splitDeckId, type RemoteClient, type RemoteClientEvents } from './client';
import { PtydeckRemote } from './ptydeck-remote';
import type { RemoteEntry, RemoteStore } from './store';

type Event = Extract<ViewerEvent, { type: 'session' | 'closed' | 'remotes' }>;

/**
 * Every remote's client, kept in step with the store (added or removed here, over the API, or by the CLI
 * in another process), merged into one view for the doors: the sessions, the statuses, the route for an
 * id `host/id`, and a change feed for the events socket. Answers only from what the clients already
 * know: nothing here waits on a remote.
 */
export class RemotesHub implements SessionsElsewhere {
  private readonly clients = new Map<string, RemoteClient>();
  private readonly listeners = new Set<(e: Event) => void>();
  private statusTimer: NodeJS.Timeout | null = null;
  private readonly offStore: () => void;
  private stopped = false;

  constructor(private readonly store: RemoteStore) {
    this.reconcile();
    this.offStore = store.watch(() => this.reconcile());
  }

  list(): SessionSummary[] {
    return [...this.clients.values()].flatMap((c) => c.sessions());
  }

  remotes(): RemoteStatus[] {
    return [...this.clients.values()].map((c) => c.status()).sort((a, b) => a.name.localeCompare(b.name));
  }

  status(name: string): RemoteStatus | null {
    return this.clients.get(name)?.status() ?? null;
  }

  route(id: string): ElsewhereRoute | null {
    const parts = splitDeckId(id);
    const client = parts ? this.clients.get(parts.host) : undefined;
    return client && parts ? client.route(parts.remoteId) : null;
  }

  watch(listener: (e: Event) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  retryNow(name: string): boolean {
    const c = this.clients.get(name);
    c?.retryNow();
    return !!c;
  }

  stop(): void {
    this.stopped = true;
    this.offStore();
    if (this.statusTimer) clearTimeout(this.statusTimer);
    for (const c of this.clients.values()) c.stop();
    this.clients.clear();
    this.listeners.clear();
  }

  private reconcile(): void {
    if (this.stopped) return;
    const entries = new Map(this.store.list().map((e) => [e.name, e]));
    for (const [name, client] of [...this.clients]) {
      const now = entries.get(name);
      // Removed, or removed and added again under the same name (another URL or token).
      if (!now || now.createdAt !== client.entry.createdAt) {
        this.clients.delete(name);
        client.stop();
      }
    }
    for (const entry of entries.values()) {
      if (!this.clients.has(entry.name)) this.clients.set(entry.name, this.start(entry));
    }
    this.statusChanged();
  }

  private start(entry: RemoteEntry): RemoteClient {
    let token: string | Error;
    try {
      token = this.store.token(entry);
    } catch (err) {
      token = err as Error;
    }
    const out: RemoteClientEvents = {
      session: (s) => this.emit({ type: 'session', session: s }),
      closed: (id) => this.emit({ type: 'closed', id }),
      status: () => this.statusChanged(),
    };
    return entry.kind === 'aio' ? new AioRemote(entry, token, out) : new PtydeckRemote(entry, token, out);
  }

  /** Statuses change in bursts (a remote's whole listing arrives at once): tell the sockets once. */
  private statusChanged(): void {
    if (this.statusTimer || this.stopped) return;
    this.statusTimer = setTimeout(() => {
      this.statusTimer = null;
      this.emit({ type: 'remotes', remotes: this.remotes() });
    }, StatusCoalesceMs);
  }

  private emit(e: Event): void {
    for (const l of this.listeners) l(e);
  }
}

/** The same coalescing window as the events socket's own (ViewerConstants.EventCoalesceMs). */
const StatusCoalesceMs = 50;
