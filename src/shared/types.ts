/**
 * Wire types shared by the server (src/main) and the viewer (src/renderer). One definition each.
 * This module imports nothing.
 */

/**
 * AIO's BashCommandStatus, and `denied`: a person (or the approval policy) refused the line, which
 * never ran. `exit_code` is set only when `completed`.
 */
export type CommandStatus = 'running' | 'completed' | 'hard_timeout' | 'no_change_timeout' | 'terminated' | 'denied';

/** Why a native `send` returned (seeds 001/002). */
export type WaitReason = 'stdin_read' | 'inferred_idle' | 'timeout' | 'session_exit';

export type FloorMode = 'watch' | 'type' | 'takeover';
export type Controller = 'agent' | 'person';
export type BackendKind = 'native' | 'tmux' | 'host' | 'pipe';

/** Where the shell is: starting up, waiting at its prompt, running something, or gone. */
export type ShellState = 'starting' | 'prompt' | 'busy' | 'exited';

export interface CommandInfo {
  /** The command line; for a line typed at the prompt, as it was echoed. */
  command: string | null;
  source: 'exec' | 'typed';
  status: CommandStatus;
  exitCode: number | null;
  startedAt: string;
  finishedAt: string | null;
}

/** Where a session's title came from: set by its agent or the person, the program's window title (OSC 0/2), or the running command. */
export type TitleSource = 'set' | 'window' | 'command';

/** Limits on a session title set through the API (a window title from the program is cut to the same length). */
export const TitleLimits = {
  /** Long enough for "claude: refactor the session module, part 3 of 6"; short enough for one line of a listing. */
  MaxChars: 120,
} as const;

/** What the viewer and the native API list for a session. */
export interface SessionSummary {
  id: string;
  owner: string;
  /**
   * What to call this terminal: the title its agent or the person set, else the program's own window
   * title, else the running (or last) command; null when there is none of these. `titleSource` says which.
   */
  title: string | null;
  titleSource: TitleSource | null;
  backend: BackendKind;
  /** Which door opened it: aio-v1, aio-v2, execd, native, mcp, viewer. */
  origin: string;
  createdAt: string;
  lastUsedAt: string;
  cols: number;
  rows: number;
  cwd: string;
  shellState: ShellState;
  exitCode: number | null;
  floor: FloorMode;
  controller: Controller;
  /** Why the floor is what it is, when ptydeck or a bulk action changed it (a pause, a lease that ran out); null otherwise. */
  floorReason: string | null;
  /**
   * While the person holds the floor with no viewer of theirs connected: when the floor returns to the
   * agent (PTYDECK_FLOOR_LEASE_SECS after the last viewer left). Null while a viewer is connected.
   */
  floorLeaseExpiresAt: string | null;
  /** Agent actions the floor refused since the person took it (reset by each takeover). */
  refusals: number;
  /** Who was refused, how often, which actions (input, exec, send, signal, resize, close), and when last. */
  refusedBy: { agent: string; count: number; actions: string[]; last: string }[];
  /** The running command, or else the last one. */
  command: CommandInfo | null;
  /**
   * The readiness detector's view: the foreground program is blocked reading the terminal and asks
   * (held for a moment before it changes; a full-screen program that redraws on its own does not count).
   */
  waitingForInput: boolean;
  /** While waiting for input: the line the program waits on, as the screen shows it ("Deploy to prod? [y/N] "). */
  prompt: string | null;
  /** Clients attached right now (agent sockets and viewers). */
  attached: number;
  /** Of those, the person's viewers (terminal tabs showing this session). */
  viewers: number;
  /** Survives a restart of ptydeck (PTY host or tmux backend). */
  durable: boolean;
  /** Was taken back after ptydeck restarted (it kept running while ptydeck was down). */
  restored: boolean;
  /**
   * The remote it lives on (see RemoteStatus), absent for the deck's own sessions. Its `id` is then
   * `host/remote-id`, unique in the deck.
   */
  host?: string;
  /** How the deck reaches a remote session, and what it can do there. */
  remote?: RemoteSessionInfo;
}

/** Other terminal servers the deck shows (src/main/remotes): another ptydeck, or an AIO Sandbox endpoint. */
export type RemoteKind = 'ptydeck' | 'aio';

/**
 * `connecting` before the first answer; `online`; `offline` (down, slow, refusing: `reason` says which)
 * and retrying with backoff; `unauthorized` (the remote rejected the token: retried too, slower, in
 * case it is fixed there).
 */
export type RemoteState = 'connecting' | 'online' | 'offline' | 'unauthorized';

export interface RemoteStatus {
  name: string;
  kind: RemoteKind;
  /** The remote's base URL (never carries a credential). */
  url: string;
  /** Added with --insecure: plain http to a non-loopback address. */
  insecure: boolean;
  /** The stored token is never shown again; this is its last few characters. */
  tokenHint: string;
  state: RemoteState;
  /** Why it is not online, in words (null when online). */
  reason: string | null;
  /** When the state last changed (ISO). */
  since: string;
  /** When the next attempt starts (ISO), while offline or unauthorized. */
  retryAt: string | null;
  /** Sessions listed from it (kept while it is offline, so its tabs resume when it is back). */
  sessions: number;
}

export interface RemoteSessionInfo {
  kind: RemoteKind;
  /** The session's id on the remote. */
  id: string;
  /** The deck can hold the floor there (ptydeck) or not (aio: no floor control, Watch and Type only). */
  floorControl: boolean;
  /**
   * aio: how the deck watches it. `socket` through the terminal's WebSocket; `polling` its screen,
   * because an agent holds the terminal's only socket (AIO allows one; the deck never knocks it off).
   */
  watch?: 'socket' | 'polling';
}

/** Frames of the viewer's session-list socket (/api/events), server to client. */
export type ViewerEvent =
  | { type: 'hello'; sessions: SessionSummary[]; principal: string }
  | { type: 'session'; session: SessionSummary }
  | { type: 'closed'; id: string }
  /** Every remote's status, after `hello` and whenever one changes (person only). */
  | { type: 'remotes'; remotes: RemoteStatus[] };

/**
 * Channels of a session's output. A terminal has one; a session on pipes (the bash API, execd's pty=0)
 * keeps stdout and stderr apart, and the bash API's host adds its own transcript (the command line
 * before a command, how it ended after it).
 */
export const OutputChannel = { Stdout: 1, Stderr: 2, Transcript: 3 } as const;

/** Frames of the viewer's terminal socket (/api/sessions/{id}/view). Output itself travels as binary frames. */
export type ViewerServerFrame =
  /**
   * First frame, and again after a resync: reset the terminal to this size and write `data`. With
   * `channels` (a session on pipes, which has no screen to snapshot) `data` is empty, the recent output
   * follows as binary frames, and every binary frame starts with its OutputChannel byte.
   */
  | { type: 'snapshot'; data: string; cols: number; rows: number; offset: number; channels?: boolean }
  /**
   * First frame instead of a snapshot when the client asked `?since=N` and the log still holds N:
   * output continues as binary frames from exactly N (keep the terminal as it is); `channels` as in a
   * snapshot.
   */
  | { type: 'resume'; offset: number; cols: number; rows: number; channels?: boolean }
  /**
   * A remote session's host went away (`offline`, with the reason) or came back (`online`; a `resume`
   * or `snapshot` follows). The socket stays open meanwhile; keys typed are refused with an `error`.
   */
  | { type: 'remote'; state: 'offline' | 'online'; reason: string | null }
  /** The PTY's size changed (another viewer or the agent resized it): render at this size. */
  | { type: 'size'; cols: number; rows: number }
  /** The viewer fell too far behind; a fresh snapshot follows. */
  | { type: 'resync'; reason: string }
  | { type: 'exit'; exitCode: number | null }
  | { type: 'error'; message: string };

export type ViewerClientFrame =
  | { type: 'input'; data: string }
  | { type: 'resize'; cols: number; rows: number }
  /** Bytes of binary output the viewer has parsed (xterm's write callback) since its last ack. */
  | { type: 'ack'; bytes: number };

/** One run of equally styled characters in a glance row: text, then colours (palette index 0-255 or `#rrggbb`) and flags. */
export interface GlanceRun {
  t: string;
  fg?: number | string;
  bg?: number | string;
  /** Bold. */
  b?: 1;
  /** Inverse video. */
  i?: 1;
  /** Dim. */
  d?: 1;
}

/** The screen of a session as the overview shows it: the visible rows, each a list of runs. */
export interface Glance {
  id: string;
  cols: number;
  rows: number;
  lines: GlanceRun[][];
  /** Cursor position on the screen (0-based), when it is visible. */
  cursor: { x: number; y: number } | null;
  /** When this session last printed something (epoch ms). */
  lastOutputAt: number;
}

/** Which agents are paused (their sessions taken over, new ones too), or everyone. */
export interface PauseState {
  all: boolean;
  agents: string[];
}

/** Frames of the deck socket (/api/deck), server to client: the pause state, and glances of the sessions asked for. */
export type DeckServerFrame = { type: 'deck'; paused: PauseState } | { type: 'glance'; glance: Glance } | { type: 'error'; message: string };

/** Client to server: the sessions whose glances this page wants now ([] when the overview is hidden). */
export type DeckClientFrame = { type: 'glances'; ids: string[] };

/** The deck's bulk actions (POST /api/pause, /api/resume, /api/interrupt): what they touched. */
export interface BulkResult {
  agent: string | null;
  sessions: string[];
}

/** Viewer flow control: the server stops sending a viewer this far ahead of its acks. */
export const ViewerFlowControl = {
  HighWatermarkBytes: 1024 * 1024,
  /** The viewer acks after parsing at least this many bytes (must be well below the high watermark). */
  AckEveryBytes: 32 * 1024,
} as const;
