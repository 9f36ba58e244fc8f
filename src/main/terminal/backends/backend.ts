/**
 * What the session core needs from something that runs a shell. node-pty, tmux and plain pipes all fit
 * behind it; nothing above this interface knows which one it talks to.
 */
export type BackendKind = 'native' | 'tmux' | 'pipe';

export interface SpawnSpec {
  /** The session this process belongs to (the tmux backend names its tmux session after it). */
  sessionId?: string;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
}

export interface ProcessExit {
  exitCode: number | null;
  /** Signal number that ended the process, when one did. */
  signal: number | null;
}

export interface TerminalProcess {
  /** The shell's pid (for tmux: the pane's shell). */
  readonly pid: number;
  /** False for pipe mode: no line discipline, no foreground group, no resize. */
  readonly isTty: boolean;
  write(data: string | Uint8Array): void;
  /**
   * Input accepted but not yet taken by the terminal (its program is not reading). Absent where the
   * backend cannot tell; then nothing is refused or dropped for backlog, and only the caps apply.
   */
  readonly pendingInputBytes?: number;
  resize(cols: number, rows: number): void;
  /** Ends the shell itself; process-tree teardown lives in processes.ts. */
  kill(signal?: NodeJS.Signals): void;
  /** Output in arrival order; `channel` is 1 (stdout/tty) or 2 (stderr, pipe mode only). */
  onData(listener: (data: Buffer, channel: number) => void): void;
  /** Fires once, after the last output has been delivered. */
  onExit(listener: (exit: ProcessExit) => void): void;
}

export interface Backend {
  readonly kind: BackendKind;
  spawn(spec: SpawnSpec): TerminalProcess;
}
