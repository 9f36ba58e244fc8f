/**
 * Wire types shared by the server (src/main) and the viewer (src/renderer). One definition each.
 * This module imports nothing.
 */

/** AIO's BashCommandStatus. `exit_code` is set only when `completed`. */
export type CommandStatus = 'running' | 'completed' | 'hard_timeout' | 'no_change_timeout' | 'terminated';

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

/** What the viewer and the native API list for a session. */
export interface SessionSummary {
  id: string;
  owner: string;
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
  /** Agent actions the floor refused since the person took it (reset by each takeover). */
  refusals: number;
  /** Who was refused, how often, which actions (input, exec, send, signal, resize, close), and when last. */
  refusedBy: { agent: string; count: number; actions: string[]; last: string }[];
  /** The running command, or else the last one. */
  command: CommandInfo | null;
  /** The readiness detector's view: the foreground program is blocked reading the terminal. */
  waitingForInput: boolean;
  /** Clients attached right now (agent sockets and viewers). */
  attached: number;
  /** Survives a restart of ptydeck (PTY host or tmux backend). */
  durable: boolean;
  /** Was taken back after ptydeck restarted (it kept running while ptydeck was down). */
  restored: boolean;
}

/** Frames of the viewer's session-list socket (/api/events), server to client. */
export type ViewerEvent =
  | { type: 'hello'; sessions: SessionSummary[]; principal: string }
  | { type: 'session'; session: SessionSummary }
  | { type: 'closed'; id: string };

/** Frames of the viewer's terminal socket (/api/sessions/{id}/view). Output itself travels as binary frames. */
export type ViewerServerFrame =
  /** First frame, and again after a resync: reset the terminal to this size and write `data`. */
  | { type: 'snapshot'; data: string; cols: number; rows: number; offset: number }
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

/** Viewer flow control: the server stops sending a viewer this far ahead of its acks. */
export const ViewerFlowControl = {
  HighWatermarkBytes: 256 * 1024,
  /** The viewer acks after parsing at least this many bytes (must be well below the high watermark). */
  AckEveryBytes: 32 * 1024,
} as const;
