/**
 * Every tuning number of the terminal core, each with one home and the reason for its value.
 * Configuration (src/main/config.ts) may override the ones marked "default".
 */

export const OutputLogConstants = {
  /** default: bytes of output kept per session. AIO's `replay_bytes` may ask for up to 10 MiB, so keep that much. */
  DefaultCapacityBytes: 10 * 1024 * 1024,
  /**
   * Segment size of the log. Below glibc's mmap threshold (128 KiB): larger buffers are each a fresh
   * mapping, whose pages the kernel faults in and zeroes one by one, which cost more than the copy into
   * them (about 1-2 ms per MiB appended against 0.2-0.5). A 10 MiB log is 160 segments.
   */
  SegmentBytes: 64 * 1024,
  /**
   * Segments evicted (a log at capacity) or spilled (the memory budget) wait here for any log of the
   * process to reuse (see OutputLog's viewHolders), up to this many: 2 MiB, outside every log's
   * residentBytes. A flood evicts one per segment it fills. While output flows, a memory budget keeps
   * more (MemoryConstants.SparesKeptQuietMs).
   */
  SpareSegments: 32,
} as const;

export const StreamConstants = {
  /** Coalesce PTY chunks that arrive within this window into one frame per client (VS Code uses 5 ms, Hyper 16 ms). */
  BatchMs: 4,
  /**
   * A stream that keeps filling its window (StreamingBytes or more each time) has it doubled, up to this:
   * with many sessions printing at once, a 4 ms window cut each into frames of a few KiB, and the cost
   * of a frame (a write, a wake of the reader) dominated. It falls back to BatchMs once output slows.
   */
  MaxBatchMs: 16,
  StreamingBytes: 1024,
  /** Output this small since the last flush (a keystroke's echo) goes out at once, whatever the window. */
  ImmediateBytes: 256,
  /** Largest payload of one live frame; execd's own pump reads 32 KiB, larger frames only add latency for other sessions. */
  MaxFrameBytes: 64 * 1024,
  /** A socket with this many bytes handed to the kernel but not yet flushed is not sent more until it drains below the low mark. */
  SocketHighWatermarkBytes: 1024 * 1024,
  SocketLowWatermarkBytes: 256 * 1024,
  /**
   * An agent's socket this far behind the log (capped at a quarter of it) holds the terminal back when
   * its PTY is read in another process (the PTY host) until it is within ThrottleResumeBytes again, as a
   * slow reader of a real terminal would: otherwise the host reads far faster than the client takes, and
   * the log drops bytes the client never got. In-process node-pty needs none: it shares the thread.
   */
  ThrottleAboveBytes: 4 * 1024 * 1024,
  ThrottleResumeBytes: 1024 * 1024,
  /** A reader that took nothing for this long has stalled: it holds nothing back (the shell runs on without it). */
  ReaderStallMs: 2000,
  /** While a session holds its terminal back, this often it looks again (a reader may have stalled meanwhile). */
  ThrottleCheckMs: 50,
  /**
   * After a restart, a terminal taken back from the PTY host is held back as if its clients were still
   * reading, until the first of them reconnects or this long has passed (restart-hold.ts): long enough
   * for a client's reconnect with backoff, short enough that a flood nobody comes back for does not wait
   * long.
   */
  RestartHoldMs: 10_000,
} as const;

export const ScreenConstants = {
  /** default: scrollback lines of the headless screen mirror (what a viewer sees when it attaches). */
  DefaultScrollbackLines: 5000,
  /** Parse the log into the mirror once output has been quiet this long, so a later snapshot is cheap. */
  IdleCatchUpMs: 150,
  /** While other sessions print, a quiet session's catch-up waits for them, but no longer than this. */
  IdleCatchUpMaxDeferMs: 5000,
  /** Bytes handed to the headless parser per step, so one big catch-up never blocks the event loop for long. */
  CatchUpChunkBytes: 256 * 1024,
  /**
   * Further behind than this (or behind what the log still holds), the mirror is rebuilt from the log's
   * last RebuildTailBytes instead of parsing everything: the scrollback keeps only the last lines anyway.
   */
  RebuildAboveBytes: 4 * 1024 * 1024,
  RebuildTailBytes: 1024 * 1024,
  /** The same threshold for a catch-up nobody waits for (after quiet): it readies a later look, cheaply. */
  IdleRebuildAboveBytes: 2 * 1024 * 1024,
  /**
   * A rebuild answers none of the queries it replays (asked long ago: the answers would be typed into
   * whatever reads now), except the newest one when it was asked less than this long ago: a program that
   * printed much and then asked (`cat big; vim`) still waits for it.
   */
  RecentQueryMs: 1000,
  /** A prompt line is looked for this many lines above the cursor (a question, a blank line, then the cursor). */
  PromptLookBackLines: 3,
  /** A prompt line longer than this is cut (its end kept): a listing shows one line. */
  PromptMaxChars: 200,
  /**
   * Bytes per step when the screen catches up on its own (after output went quiet): small enough that
   * one step blocks the event loop well under a millisecond or two (the parser does ~50 MiB/s), so an
   * exec or a keystroke arriving meanwhile waits at most that long. A catch-up someone waits for (a
   * snapshot, a viewport) takes CatchUpChunkBytes steps.
   */
  IdleCatchUpSliceBytes: 32 * 1024,
  /**
   * Steps up to this size are parsed at once (xterm's writeSync). xterm's own write parses on a later
   * timer (setTimeout 0, a millisecond or more in Node) even when nothing else waits, so each look at a
   * screen with a few new bytes (a send's cursor mark, its viewport) cost that millisecond. Larger steps
   * keep xterm's time-sliced write, which yields to the event loop on its own.
   */
  SyncParseMaxBytes: 64 * 1024,
  /**
   * What a line of the headless buffer costs: xterm keeps three 32-bit words a cell in a typed array
   * of the line's own, and each line is also a few JS objects and an allocation of its own. Measured
   * (RSS of 20 screens with full 5,000-line scrollbacks, 80 to 250 columns): 12.8 bytes a cell plus
   * about 900 bytes a line; 2.4 KiB a line at 120 columns, where cells alone would say 1.4 KiB.
   */
  BytesPerCell: 13,
  BytesPerLine: 900,
  /** Screens parsing at once, process-wide (screen.ts ParseSlots). */
  ParsingAtOnce: 1,
} as const;

export const MemoryConstants = {
  /**
   * default: memory for all sessions' output logs and headless screens together (PTYDECK_MEMORY_BUDGET_BYTES).
   * Above it, screens nobody watches are dropped (rebuilt from the log when asked for), then cold log
   * segments go to disk, least recently active sessions first.
   */
  DefaultBudgetBytes: 160 * 1024 * 1024,
  /**
   * Each session keeps up to this much of its newest output in memory (a screen rebuild reads 1 MiB),
   * less when the budget shared out over the sessions is smaller, but never less than MinHotTailBytes
   * (a command's output is rendered from a 256 KiB window).
   */
  HotTailBytes: 1024 * 1024,
  MinHotTailBytes: 256 * 1024,
  /** The budget is checked this often, and whenever logs and screens grew by a sixteenth of it since the last check. */
  CheckMs: 1000,
  GrowthChecksPerBudget: 16,
  /**
   * A headless screen nobody watches and nobody asked for in this long is dropped, within budget or not.
   * Long enough that an agent polling the screen, or the overview glancing at a session, keeps it;
   * short enough that a hundred screens made once by sockets that came and went do not stay.
   */
  UnusedScreenMs: 30_000,
  /**
   * A session with no output and no use for this long keeps only MinHotTailBytes of its log in memory.
   * Each byte goes to disk at most once however often a session pauses, and only sessions that printed
   * more than the hot tail have anything to write.
   */
  IdleLogMs: 5_000,
  /**
   * Once the budget has let go of this fraction of itself, a collection is started so the memory is
   * really freed (memory-budget.ts, collect.ts), at most every CollectEveryMs. A forced collection is
   * one atomic pause of the event loop in proportion to the heap: 50-170 ms in a server with a hundred
   * sessions (--trace-gc, bench scale case), where it ran every second of a 50-session burst. So the
   * server forces none while output flows (V8 collects by itself then, incrementally, each time buffers
   * grew by 64 MiB) and one once it is quiet. The PTY host's heap is a few MiB (a pause of a few ms) and
   * everything it reads is garbage a moment later: it also collects while output flows, every
   * HostCollectEveryMs.
   */
  CollectAfterFreeing: 8,
  /**
   * Over budget, logs grow and spill at the same pace: each check spills about a GrowthChecksPerBudget-th
   * of the budget, and the appends after it need as much again. So while output flows, spare segments
   * (OutputLogConstants.SpareSegments) up to that much are kept for them, instead of 2 MiB; once no log
   * has grown for this long, the extra is let go of. Measured (50 sessions printing 8 MiB at once, three
   * rounds, 160 MiB budget): fresh segments in the server fell from 1050 to 450 MiB (the rest is logs
   * filling up to the budget again after a quiet spell), its full collections from 100 to 65.
   */
  SparesKeptQuietMs: 1000,
  CollectEveryMs: 1000,
  /**
   * After output has been quiet for SparesKeptQuietMs, a collection is started and the C heap is trimmed
   * this long after it (memory-budget.ts): V8 finishes a collection of a server's heap in tens of
   * milliseconds once nothing else runs. Measured (bench scale case): 373 MiB after the bursts without
   * the trim, about 140 MiB with it.
   */
  TrimAfterCollectMs: 1000,
  HostCollectEveryMs: 250,
} as const;

/**
 * Answers to a program's terminal queries (cursor position, device attributes) are input the server
 * writes itself; like any other input they are bounded, so a program that floods queries without
 * reading the answers (`yes $'\e[6n'`) costs nothing that grows.
 */
export const QueryAnswerConstants = {
  /** Answers one parsed chunk may produce, written as one: a program that asks and waits needs a few dozen bytes. */
  MaxBytesPerChunk: 4096,
  /** Answer bytes a session may write per second: far above any program that reads its answers, far below a flood. */
  BytesPerSecond: 64 * 1024,
} as const;

export const InputConstants = {
  /**
   * Input waiting for a program that does not read it, beyond which more is refused (4 of the largest
   * single inputs): the server never holds more than this for a terminal whose program has stopped reading.
   */
  MaxPendingBytes: 4 * 1024 * 1024,
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
  /** The same for the console's copy, which keeps only TruncateKeepBytes of each end (see consoleText). */
  ConsoleRenderWindowBytes: 64 * 1024,
  /** How long a new shell may take to print its first prompt marker before creation fails. */
  ShellStartTimeoutMs: 10000,
  /** How long a person's shell (which reads their own rc file) is waited for before their terminal opens anyway. */
  PersonShellGraceMs: 3000,
} as const;

export const SessionConstants = {
  /** default: AIO_SHELL_MAX_SESSIONS */
  DefaultMaxSessions: 20,
  /** default: PTYDECK_MAX_SESSIONS_PER_AGENT. Half the default global limit: two busy agents fit, one cannot take everything. */
  DefaultMaxSessionsPerAgent: 10,
  /**
   * Sessions kept for the person whatever agents do (at most a quarter of the global limit): the person
   * can always open a terminal to look into what the agents are doing.
   */
  PersonReserveSessions: 2,
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

export const HostConstants = {
  /**
   * Largest OUTPUT frame from the PTY host. The host reads the PTY on its own core and sends what piled
   * up since its last frame: larger frames mean fewer wakeups and less per-MiB work in the server.
   */
  MaxFrameBytes: 256 * 1024,
  /**
   * The server reads its connection to the host into one buffer of this size, again and again, instead
   * of a fresh 64 KiB per read: the kernel's copy into fresh memory was most of the server's page faults
   * (perf, 128 MiB `cat`), and fresh memory is what costs most per MiB on the machines measured.
   */
  ReadBufferBytes: 256 * 1024,
  /**
   * A server this far behind the host's log pauses the PTY (the program blocks, as it would on a slow
   * terminal) instead of letting the host's bounded log drop bytes the server never got; reading
   * resumes once it is back within ResumeBelowBytes. Capped at half the session's log.
   */
  PauseAboveBytes: 4 * 1024 * 1024,
  ResumeBelowBytes: 1024 * 1024,
  /**
   * The server tells the host what its agents' sockets still need kept (KEEP) once that mark has moved
   * this far, and otherwise within KeepTrailMs of its last move: the host only needs it near capacity.
   */
  KeepStepBytes: 256 * 1024,
  KeepTrailMs: 20,
  /** A connection must finish the handshake within this, or it is dropped. */
  HandshakeTimeoutMs: 2000,
  /** Connections still in their handshake beyond this many are refused at once (a flood of them is an attack). */
  MaxPendingConnections: 32,
  /**
   * With no session and no server connected for this long, the host exits. Long enough that a server
   * restarting (or a test's next server) finds the same host; short enough not to linger.
   */
  IdleExitMs: 3000,
  /**
   * A host just started waits this long for its first client before it gives up: the server that
   * started it may be slow to connect on a loaded machine, and must not find it gone.
   */
  FirstClientGraceMs: 30_000,
  /** How long a server waits for a host it started to listen (a bound for failures, not a speed). */
  StartTimeoutMs: 30_000,
  /** Input is sent to the host in frames of at most this size (a large paste is one write for the session, several frames). */
  InputFrameBytes: 1024 * 1024,
  /**
   * Input waiting at the host beyond which it drops more. The server refuses input past
   * InputConstants.MaxPendingBytes from what the host reports (INPUTSTATE), so this only bounds a server
   * that does not: set well above anything one accepted input can add (the default input limit is 1 MiB).
   */
  DropInputAboveBytes: 16 * 1024 * 1024,
  /** While input waits for a program to read it, the host reports how much at most this often. */
  InputStateEveryMs: 25,
  /** How long a server waits for a host it told to shut down before it kills it. */
  ShutdownWaitMs: 5000,
  /** Released sessions whose shell ignores SIGHUP get SIGKILL after this. */
  ReleaseKillMs: 1000,
  /**
   * How often the host checks that its socket is still there: a host whose socket was removed (its
   * home deleted) can never be reached again, so it ends its sessions and exits instead of lingering.
   */
  SocketCheckMs: 5000,
} as const;
