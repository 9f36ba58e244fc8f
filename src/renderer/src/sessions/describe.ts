import type { FloorMode, SessionSummary } from '../../../shared/types';

/** How the viewer talks about a session: one wording for the tab, the header and the tests. */
export type StatusKind = 'starting' | 'running' | 'waiting' | 'prompt' | 'failed' | 'exited';

export interface Status {
  kind: StatusKind;
  /** Short word(s) for the badge. */
  label: string;
  /** The command it is about, when there is one. */
  command: string | null;
  /** Something went wrong: a failed command, or a shell that exited with a non-zero code (shown red). */
  bad: boolean;
}

/** No terminal: commands run on pipes (the bash API, execd's pty=0); there is no prompt to wait at. */
export const isPipeSession = (s: SessionSummary): boolean => s.backend === 'pipe';

export function statusOf(s: SessionSummary): Status {
  const cmd = s.command?.command ?? null;
  const idle = isPipeSession(s) ? 'idle' : 'at prompt';
  if (s.shellState === 'exited') {
    const bad = s.exitCode !== null && s.exitCode !== 0;
    return { kind: 'exited', label: s.exitCode === null ? 'ended' : `exited (code ${s.exitCode})`, command: null, bad };
  }
  if (s.waitingForInput) return { kind: 'waiting', label: 'waiting for input', command: cmd, bad: false };
  if (s.shellState === 'starting') return { kind: 'starting', label: 'starting', command: null, bad: false };
  if (s.shellState === 'busy') return { kind: 'running', label: 'running', command: cmd, bad: false };
  const last = s.command;
  if (last && last.status !== 'running' && last.exitCode !== null && last.exitCode !== 0) {
    return { kind: 'failed', label: `${idle} · last exit ${last.exitCode}`, command: cmd, bad: true };
  }
  return { kind: 'prompt', label: idle, command: null, bad: false };
}

/**
 * What to call a session on a tab: its title (set, the program's own, or the running command), else
 * its id, shortened when it is a long generated one (a UUID says nothing past its first characters).
 */
export function displayTitle(s: SessionSummary): string {
  return s.title ?? shortId(s.remote?.id ?? s.id);
}

/** The tooltip of a tab: everything that tells it apart, in full. */
export function tabTooltip(s: SessionSummary): string {
  const lines = [s.title ?? s.id];
  if (s.title) lines.push(`id ${s.id}`);
  lines.push(`${ownerLabel(s.owner)} · ${s.cwd}`);
  if (s.titleSource === 'window') lines.push("(the program's own title)");
  return lines.join('\n');
}

const ACTION_WORDS: Record<string, string> = {
  input: 'type',
  send: 'type',
  exec: 'run a command',
  signal: 'send a signal',
  resize: 'resize',
  close: 'close it',
};

/** "claude tried to type 2×, refused": one line per agent the floor refused since the person took it. */
export function refusalLines(s: SessionSummary): string[] {
  return s.refusedBy.map((r) => {
    const words = [...new Set(r.actions.map((a) => ACTION_WORDS[a] ?? a))];
    const what = words.length > 1 ? `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}` : (words[0] ?? 'act');
    return `${ownerLabel(r.agent)} tried to ${what} ${r.count}×, refused`;
  });
}

/** Seconds (rounded up) until an ISO time, never negative. */
export function secondsUntil(iso: string, now = Date.now()): number {
  return Math.max(0, Math.ceil((Date.parse(iso) - now) / 1000));
}

/** "12 s", "4 min", "2 h": how long ago, or for how long, in a glance. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h} h` : `${Math.round(h / 24)} d`;
}

export const isEnded = (s: SessionSummary): boolean => s.shellState === 'exited';

export const FloorText: Record<FloorMode, { short: string; banner: string }> = {
  watch: { short: 'Watching', banner: 'Read only: the agent types alone.' },
  type: { short: 'Typing', banner: "Your keys go in beside the agent's." },
  takeover: { short: 'Taken over', banner: 'Agents are refused until you release.' },
};

/** The floor chip's words for one session: a person's own terminal has no agent to refuse. */
export function floorShort(s: SessionSummary): string {
  if (isOwnSession(s)) return s.floor === 'watch' ? 'Read only' : 'Yours';
  return FloorText[s.floor].short;
}

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

/** A generated id (a UUID) shortened to its first block; a name an agent chose is shown whole. */
export const shortId = (id: string): string => (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id) ? id.slice(0, 8) : id);

/** `/home/me/src/x` → `~/src/x` is not knowable here (no $HOME); keep the last two parts instead. */
export function shortCwd(cwd: string): string {
  const parts = cwd.split('/').filter(Boolean);
  if (parts.length <= 2) return cwd || '/';
  return '…/' + parts.slice(-2).join('/');
}
