import type { FloorMode, SessionSummary } from '../../../shared/types';

/** How the viewer talks about a session: one wording for the tab, the header and the tests. */
export type StatusKind = 'starting' | 'running' | 'waiting' | 'prompt' | 'failed' | 'exited';

export interface Status {
  kind: StatusKind;
  /** Short word(s) for the badge. */
  label: string;
  /** The command it is about, when there is one. */
  command: string | null;
}

export function statusOf(s: SessionSummary): Status {
  const cmd = s.command?.command ?? null;
  if (s.shellState === 'exited') return { kind: 'exited', label: s.exitCode === null ? 'ended' : `exited (code ${s.exitCode})`, command: null };
  if (s.waitingForInput) return { kind: 'waiting', label: 'waiting for input', command: cmd };
  if (s.shellState === 'starting') return { kind: 'starting', label: 'starting', command: null };
  if (s.shellState === 'busy') return { kind: 'running', label: 'running', command: cmd };
  const last = s.command;
  if (last && last.status !== 'running' && last.exitCode !== null && last.exitCode !== 0) {
    return { kind: 'failed', label: `at prompt · last exit ${last.exitCode}`, command: cmd };
  }
  return { kind: 'prompt', label: 'at prompt', command: null };
}

export const isEnded = (s: SessionSummary): boolean => s.shellState === 'exited';

export const FloorText: Record<FloorMode, { short: string; banner: string }> = {
  watch: { short: 'Watching', banner: 'Read only: the agent types alone.' },
  type: { short: 'Typing', banner: "Your keys go in beside the agent's." },
  takeover: { short: 'Taken over', banner: 'Agents are refused until you release.' },
};

/** `admin` owns what the person's credential opened, through the viewer or any other door. */
export const ADMIN_OWNER = 'admin';

export const isOwnSession = (s: SessionSummary): boolean => s.owner === ADMIN_OWNER;

export function ownerLabel(owner: string): string {
  return owner === ADMIN_OWNER ? 'You' : owner;
}

/** Who may type, in words: a person's own terminal has no agent to hand the floor to. */
export function floorHolder(s: SessionSummary): string {
  if (isOwnSession(s)) return s.floor === 'watch' ? 'Your terminal, read only here' : 'Your terminal';
  return s.controller === 'person' ? 'You hold the floor' : 'Agent has the floor';
}

export function floorBanner(s: SessionSummary): string {
  if (isOwnSession(s)) return s.floor === 'watch' ? 'Switch to Type to send keys from this tab.' : 'Your keys go in.';
  return FloorText[s.floor].banner;
}

export interface OwnerGroup {
  owner: string;
  label: string;
  sessions: SessionSummary[];
}

/** Agents alphabetically, the admin group last; sessions oldest first so tabs do not jump around. */
export function groupByOwner(sessions: Iterable<SessionSummary>): OwnerGroup[] {
  const byOwner = new Map<string, SessionSummary[]>();
  for (const s of sessions) {
    const list = byOwner.get(s.owner) ?? [];
    list.push(s);
    byOwner.set(s.owner, list);
  }
  const owners = [...byOwner.keys()].sort((a, b) => (a === ADMIN_OWNER ? 1 : b === ADMIN_OWNER ? -1 : a.localeCompare(b)));
  return owners.map((owner) => ({
    owner,
    label: ownerLabel(owner),
    sessions: byOwner.get(owner)!.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)),
  }));
}

export const shortId = (id: string): string => (id.length > 12 ? id.slice(0, 8) : id);

/** `/home/me/src/x` → `~/src/x` is not knowable here (no $HOME); keep the last two parts instead. */
export function shortCwd(cwd: string): string {
  const parts = cwd.split('/').filter(Boolean);
  if (parts.length <= 2) return cwd || '/';
  return '…/' + parts.slice(-2).join('/');
}
