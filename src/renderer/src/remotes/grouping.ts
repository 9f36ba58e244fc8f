import type { RemoteState, RemoteStatus, SessionSummary } from '../../../shared/types';
import { groupByOwner, type OwnerGroup } from '../sessions/describe';

/**
 * The deck's sessions by host, then by agent: this machine's first, then each remote by name (a remote
 * with no sessions still has its section, which says whether it is reachable).
 */
export interface HostSection {
  /** null: the deck's own sessions. */
  host: string | null;
  status: RemoteStatus | null;
  groups: OwnerGroup[];
}

export function groupByHost(sessions: Iterable<SessionSummary>, remotes: readonly RemoteStatus[]): HostSection[] {
  const local: SessionSummary[] = [];
  const byHost = new Map<string, SessionSummary[]>();
  for (const s of sessions) {
    if (!s.host) local.push(s);
    else byHost.set(s.host, [...(byHost.get(s.host) ?? []), s]);
  }
  const sections: HostSection[] = [];
  if (local.length || (!remotes.length && !byHost.size)) sections.push({ host: null, status: null, groups: groupByOwner(local) });
  const names = [...new Set([...remotes.map((r) => r.name), ...byHost.keys()])].sort();
  for (const name of names) sections.push({ host: name, status: remotes.find((r) => r.name === name) ?? null, groups: groupByOwner(byHost.get(name) ?? []) });
  return sections;
}

/** Tabs in the order the sidebar shows them. */
export const tabOrder = (sections: HostSection[]): SessionSummary[] => sections.flatMap((h) => h.groups.flatMap((g) => g.sessions));

export const RemoteStateText: Record<RemoteState, string> = {
  connecting: 'Connecting',
  online: 'Online',
  offline: 'Offline',
  unauthorized: 'Token refused',
};

/** What the deck can do with a session on an aio remote, in words for its tab and header. */
export function aioNote(s: SessionSummary): string | null {
  if (s.remote?.kind !== 'aio') return null;
  if (s.remote.watch === 'polling') return 'Watched by polling its screen: an agent holds this terminal’s only socket (AIO allows one), and the deck never takes it.';
  return 'AIO has no floor control: Type sends your keys beside the agent’s; agents are never refused.';
}

/** A remote session's host answers (a local session's always does): its controls have a chance. */
export function hostUp(s: SessionSummary, remotes: readonly RemoteStatus[]): boolean {
  return !s.host || remotes.find((r) => r.name === s.host)?.state === 'online';
}
