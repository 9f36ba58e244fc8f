import type { SavedSession } from '../durable-state';

/**
 * What the session core needs from something that runs a shell. node-pty, tmux and plain pipes all fit
 * behind it; nothing above this interface knows which one it talks to.
 */
export type BackendKind = 'native' | 'tmux' | 'host' | 'pipe';

export interface SpawnSpec {
  /** The session this process belongs to (the tmux backend names its tmux session after it). */
  sessionId?: string;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
  /** What a restart needs to take the session back (durable backends keep it beside the terminal). */
  record?: SavedSession;
  /** Output bytes a durable backend keeps for a server that reconnects. */
  logBytes?: number;
}

export interface ProcessExit {
  exitCode: number | null;
  /** Signal number that ended the process, when one did. */
  signal: number | null;
}

export interface TerminalProcess {
  /** The shell's pid (for tmux: the pane's shell; 0 until a host has started it). */
  readonly pid: number;
  /** False for pipe mode: no line discipline, no foreground group, no resize. */
  readonly isTty: boolean;
  /** The terminal answers queries itself (tmux is a terminal): the session's screen must stay silent. */
  readonly answersQueries?: boolean;
  /** Resolves once `pid` is known (a terminal started in another process); absent when it is at once. */
  readonly started?: Promise<void>;
  write(data: string | Uint8Array): void;
  /**
   * Input accepted but not yet taken by the terminal (its program is not reading). Absent where the
   * backend cannot tell; then nothing is refused or dropped for backlog, and only the caps apply.
   */
  readonly pendingInputBytes?: number;
  /** Calls `done` once the terminal has taken all input written so far (a backend that queues input says when). */
  whenInputTaken?(done: () => void): void;
  resize(cols: number, rows: number): void;
  /** Ends the shell itself; process-tree teardown lives in processes.ts. */
  kill(signal?: NodeJS.Signals): void;
  /**
   * Output in arrival order; `channel` is 1 (stdout/tty) or 2 (stderr, pipe mode only). A backend that
   * numbers its bytes (the PTY host) passes each chunk's absolute offset. `data` is lent for the call
   * only (backends read into reused buffers): a listener copies what it keeps.
   */
  onData(listener: (data: Buffer, channel: number, offset?: number) => void): void;
  /** Fires once, after the last output has been delivered. */
  onExit(listener: (exit: ProcessExit) => void): void;
  /**
   * Resolves once every byte the terminal held when it was called has been delivered to onData (the
   * reader has drained the PTY). Absent where that cannot be known (tmux relays through files).
   */
  drain?(): Promise<void>;
  /** Reads, at once, whatever the terminal holds for its reader, bytes still on their way included. */
  readNow?(): void;
  /**
   * Holds the terminal back (true) or lets it go (false) on behalf of a slow reader in this process;
   * only a terminal read in another process needs it (the PTY host).
   */
  throttle?(on: boolean): void;
  /** Bytes from `offset` on may still be wanted by a reader of ours: whoever else holds them keeps them. */
  keepFrom?(offset: number): void;
  /** Stop and resume reading the terminal (a reader that cannot keep up; the program then blocks). */
  pause?(): void;
  resume?(): void;
}

export interface Backend {
  readonly kind: BackendKind;
  spawn(spec: SpawnSpec): TerminalProcess;
}

/** A terminal that an earlier server started, taken over by this one. */
export interface AdoptableProcess extends TerminalProcess {
  /** Absolute offset of the first output byte it delivers (the oldest the backend still holds). */
  readonly initialOffset: number;
  /** Starts delivering output and watching for the end; called once the session has its listeners. */
  begin(): void;
  /** Resolves once the output the backend held at adoption has been delivered (absent: at once). */
  readonly replayed?: Promise<void>;
  /** Stops following the terminal but leaves it running (ptydeck is quitting; the session survives). */
  detach(): void;
}

/**
 * A backend whose terminals outlive the server (the PTY host, tmux). Adoption is the same for both:
 * the manager asks for the survivors and rebuilds each session from its record and its output.
 */
export interface DurableBackend extends Backend {
  readonly kind: 'host' | 'tmux';
  /** Terminals an earlier server left running, each with what was recorded about it. */
  survivors(): Promise<{ saved: SavedSession; proc: AdoptableProcess }[]>;
  /** The records of this backend's open sessions, whole; coalesced by the backend unless `now`. */
  save(sessions: SavedSession[], now?: boolean): void;
  /** The session was closed for good: end its terminal and drop everything kept for it. */
  destroy(sessionId: string): void;
  dispose(): void;
}

/**
 * A session threw while handling its own terminal's output or exit (a bug). That is the session's
 * problem: thrown on, it would end the reading process's other terminals with it (the server's whole
 * connection to the PTY host, or the server itself).
 */
export function reportSessionFailure(what: string, terminal: string, err: unknown): void {
  console.error(`ptydeck: a session failed on its terminal's ${what} (${terminal}): ${(err as Error)?.stack ?? err}`);
}
