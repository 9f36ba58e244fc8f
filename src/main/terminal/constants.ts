/**
 * Every tuning number of the terminal core, each with one home and the reason for its value.
 * Configuration (src/main/config.ts) may override the ones marked "default".
 */

export const OutputLogConstants = {
  /** default: bytes of output kept per session. AIO's `replay_bytes` may ask for up to 10 MiB, so keep that much. */
  DefaultCapacityBytes: 10 * 1024 * 1024,
  /** Segment size of the log. Large enough that a 256 MiB stream is a few thousand segments, small enough that an idle session costs little. */
  SegmentBytes: 256 * 1024,
} as const;

export const StreamConstants = {
  /** Coalesce PTY chunks that arrive within this window into one frame per client (VS Code uses 5 ms, Hyper 16 ms). */
  BatchMs: 4,
  /** Output this small since the last flush (a keystroke's echo) goes out at once, whatever the window. */
  ImmediateBytes: 256,
  /** Largest payload of one live frame; execd's own pump reads 32 KiB, larger frames only add latency for other sessions. */
  MaxFrameBytes: 64 * 1024,
  /** A socket with this many bytes handed to the kernel but not yet flushed is not sent more until it drains below the low mark. */
  SocketHighWatermarkBytes: 1024 * 1024,
  SocketLowWatermarkBytes: 256 * 1024,
} as const;

export const ScreenConstants = {
  /** default: scrollback lines of the headless screen mirror (what a viewer sees when it attaches). */
  DefaultScrollbackLines: 5000,
  /** Parse the log into the mirror once output has been quiet this long, so a later snapshot is cheap. */
  IdleCatchUpMs: 150,
  /** Bytes handed to the headless parser per step, so one big catch-up never blocks the event loop for long. */
  CatchUpChunkBytes: 256 * 1024,
  /**
   * Further behind than this (or behind what the log still holds), the mirror is rebuilt from the log's
   * last RebuildTailBytes instead of parsing everything: the scrollback keeps only the last lines anyway.
   */
  RebuildAboveBytes: 4 * 1024 * 1024,
  RebuildTailBytes: 1024 * 1024,
  /** A prompt line is looked for this many lines above the cursor (a question, a blank line, then the cursor). */
  PromptLookBackLines: 3,
  /** A prompt line longer than this is cut (its end kept): a listing shows one line. */
  PromptMaxChars: 200,
} as const;

export const CommandConstants = {
  /** default: AIO's per-session no_change_timeout (seconds), applied only while a caller waits on a synchronous exec. */
  DefaultNoChangeTimeoutSecs: 120,
  /** Console transcript length; seed 003: "holds the last 100". */
  ConsoleEntries: 100,
  /** seed 003: over 30,000 bytes the first and last 15,000 are kept. */
  TruncateAboveBytes: 30000,
  TruncateKeepBytes: 15000,
  TruncationNotice: '\n[... Observation truncated due to length ...]\n',
  /** After ^C on a timeout, how long to wait for the prompt before escalating to SIGTERM/SIGKILL of the foreground group. */
  InterruptGraceMs: 2000,
  /** Raw bytes read back from the log to render one command's output; beyond this only head and tail are rendered. */
  RenderWindowBytes: 256 * 1024,
  /** How long a new shell may take to print its first prompt marker before creation fails. */
  ShellStartTimeoutMs: 10000,
} as const;

export const SessionConstants = {
  /** default: AIO_SHELL_MAX_SESSIONS */
  DefaultMaxSessions: 20,
  /** default: AIO_SHELL_SESSION_TIMEOUT_SECS (idle close) */
  DefaultIdleTimeoutSecs: 3600,
  /** How often the idle reaper looks; idle close is not time-critical. */
  ReaperIntervalMs: 15000,
  DefaultCols: 80,
  DefaultRows: 24,
  MaxCols: 1000,
  MaxRows: 500,
} as const;

export const TeardownConstants = {
  /** Grace between SIGTERM and SIGKILL when a session closes. */
  GraceMs: 3000,
  /** Poll interval while waiting for a process tree to go quiet. */
  PollMs: 25,
} as const;

export const WaitMonitorConstants = {
  /** How often running programs are checked for a terminal read (cheap: a few /proc files per session). */
  IntervalMs: 400,
  /** Output must have been quiet this long first, so a program between two prints is not "waiting". */
  SettleMs: 250,
  /**
   * A verdict (waiting or not) must hold this long before a listing changes: without it, a program that
   * reads and prints in turns flips the tab (and notifies) every few seconds.
   */
  HoldMs: 1000,
  /**
   * A wait with a timeout (top, htop, watch-like screens poll with one) counts as a question only after
   * this long without a redraw: longer than the usual refresh (top 3 s, htop 1.5 s, watch 2 s).
   */
  TimedWaitHoldMs: 5000,
  /**
   * A program that printed on its own while it was reading the terminal (no one typed) redraws by
   * itself: it is running interactively, not asking. That holds this long after its last such redraw.
   */
  SelfRedrawMemoryMs: 60_000,
} as const;
