import type { RemoteKind, RemoteStatus, SessionSummary } from '../../shared/types';
import type { ElsewhereRoute } from '../api/server';
import { RemoteRefusedError, RemoteUnreachableError } from './endpoint';
import type { RemoteLink } from './link';
import type { RemoteEntry } from './store';

/**
 * One remote as the deck sees it: its state, the sessions last listed from it (kept while it is down,
 * so tabs stay and resume), and a route for each of its sessions. One class per kind: ptydeck-remote.ts
 * (the remote's own /api: events and view sockets, the floor held there) and aio-remote.ts (an AIO
 * Sandbox endpoint: polled listing, its terminal WebSocket, screen polling when an agent holds it).
 */
export interface RemoteClient {
  readonly entry: RemoteEntry;
  status(): RemoteStatus;
  sessions(): SessionSummary[];
  route(remoteId: string): ElsewhereRoute;
  /** Skip the rest of the backoff. */
  retryNow(): void;
  stop(): void;
}

/** What a client reports to the hub, which tells every events socket. */
export interface RemoteClientEvents {
  session(s: SessionSummary): void;
  closed(deckId: string): void;
  status(): void;
}

/** Ids in the deck: `host/id`. A local id never holds a `/`, and a remote's name never does. */
export const deckId = (host: string, remoteId: string): string => `${host}/${remoteId}`;

export function splitDeckId(id: string): { host: string; remoteId: string } | null {
  const at = id.indexOf('/');
  if (at <= 0 || at === id.length - 1) return null;
  return { host: id.slice(0, at), remoteId: id.slice(at + 1) };
}

/** A remote listing more sessions than this is broken or hostile: the rest are not shown. */
export const MaxSessionsPerRemote = 1000;
/** A session id from a remote longer than this is not one a server made (ptydeck's are at most 128). */
export const MaxRemoteIdLength = 512;
/** Text fields of a remote's listing (a directory, a command) are cut here: enough for any real one. */
export const MaxRemoteTextLength = 4096;

export function statusOf(entry: RemoteEntry, link: RemoteLink, sessions: number): RemoteStatus {
  return {
    name: entry.name,
    kind: entry.kind as RemoteKind,
    url: entry.url,
    insecure: entry.insecure,
    tokenHint: entry.tokenHint,
    state: link.state,
    reason: link.reason,
    since: link.since.toISOString(),
    retryAt: link.retryAt?.toISOString() ?? null,
    sessions,
  };
}

/** A failure to reach or use a remote, in words for its group header. */
export function reasonOf(err: unknown): { reason: string; unauthorized: boolean } {
  if (err instanceof RemoteRefusedError) {
    if (err.status === 401) return { reason: `the remote rejected the token (401): ${err.message}`, unauthorized: true };
    if (err.status === 403) return { reason: `the remote refused the deck (403): ${err.message}`, unauthorized: true };
    return { reason: `the remote answered ${err.status}: ${err.message}`, unauthorized: false };
  }
  if (err instanceof RemoteUnreachableError) return { reason: err.message, unauthorized: false };
  return { reason: (err as Error)?.message ?? String(err), unauthorized: false };
}

/** Why a socket to a remote closed, in words. */
export function closeReason(code: number): string {
  if (code === 1001) return 'the remote shut down';
  if (code === 1006) return 'the connection dropped';
  if (code === 4003) return 'the remote revoked the token';
  return `the remote closed the connection (${code})`;
}
