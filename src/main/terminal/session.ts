import { randomBytes } from 'node:crypto';
import { mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendKind, SessionSummary, ShellState, TitleSource } from '../../shared/types';
import type { AdoptableProcess, Backend, DurableBackend, ProcessExit, TerminalProcess } from './backends/backend';
import type { SavedSession } from './durable-state';
import { CommandConstants, InputConstants, ScreenConstants, SessionConstants, StreamConstants } from './constants';
import { CommandTracker, NotActiveError, type ExecOptions } from './commands';
import { Emitter } from './emitter';
import { SYSTEM, type Actor, type TerminalAction } from './actor';
import { Floor, FloorRefusedError, type FloorMode } from './floor';
import { LineGateLink, type GateEvent, type GateHost } from './line-gate-link';
import { MarkerScanner, type Marker } from './marker-scanner';
import { OutputHub, type OutputReader } from './output-hub';
import { OutputLog } from './output-log';
import { foregroundPgid, hasProcfs, pidClock, readStat, signalGroup } from './processes';
import { RestartHold } from './restart-hold';
import type { ScreenMirror, QueryAnswerSink } from './screen';
import { SessionScreen } from './session-screen';
import { runSend, SendActiveError, type SendOptions, type SendResult } from './send';
import { prepareShell, type ShellKind, type ShellLaunch, childEnvironment, findShell, removeShellRcDir, shellRcDirOf } from './shell-integration';
import { environmentTracker, type ProcessGroup, type ProcessTracker } from './process-tracking';
import { killTreeSync, teardownTree, type TeardownReport } from './teardown';
import { cleanWindowTitle, normalTitle } from './title';

export interface SessionSpec {
  id: string;
  owner: string;
  /** Which door opened it (shown to people; never used for authorization). */
  origin: string;
  cwd: string;
  cols: number;
  rows: number;
  env?: Record<string, string>;
  /** Run this instead of an interactive shell (execd's `command`); the session ends when it does. */
  command?: string;
  shell?: string;
  loadUserRc?: boolean;
  logBytes: number;
  scrollbackLines?: number;
  floor: FloorMode;
  noChangeTimeoutSecs: number;
  /** `expiring` sessions are reclaimed first and never outlive ptydeck (AIO's `retention`). */
  retention?: 'persistent' | 'expiring';
  teardownGraceMs?: number;
  /** Which terminal backs the PTY: node-pty in this process, or one that outlives ptydeck (the PTY host, tmux). */
  backend?: 'native' | 'host' | 'tmux';
  /** A session re-adopted after a restart keeps its marker nonce, environment tag, process group (and its line gate hook). */
  identity?: { nonce: string; envTag: string; gateHook?: boolean; cgroup?: string | null; rcDir?: string };
  createdAt?: string;
  /** Taken over from a terminal an earlier ptydeck started (PTY host or tmux). */
  restored?: boolean;
  /** What to call it (validated by the door that took it: api/validate.ts `title`). */
  title?: string | null;
}

/** Where a session's terminal can come from: in-process node-pty, pipes, and the durable backends. */
export interface SessionBackends {
  pty: Backend;
  pipe: Backend;
  durable: Partial<Record<'host' | 'tmux', DurableBackend>>;
}

/**
 * What a session tells its subscribers: the doors, the viewer's sockets and the features (timeline,
 * approvals, recordings). This set is the interface; a feature subscribes to it and never reaches into
 * the session's fields. Listeners run synchronously on the output path: anything heavier than noting a
 * fact belongs in a queue of the feature's own.
 */
export interface SessionEvents extends Record<string, unknown> {
  /** Something a listing shows changed (command, shell state, floor, attachments, exit). */
  changed: Session;
  /**
   * Bytes appended to the output log at `offset` (pipe sessions only: channel 2 is stderr, 3 the bash
   * host's transcript). `data` is lent for the call only: it may be a view of memory the backend reads
   * into again (the PTY host's connection), so a listener that keeps bytes copies them.
   */
  output: { data: Buffer; offset: number; channel: number };
  /** Bytes about to be written to the terminal (published just before the write), by whom; `command` when they were typed for an exec (on a bash-API session: handed to `bash -c`). `offset` is the log's end then. */
  input: { data: string | Uint8Array; by: Actor; offset: number; command?: string };
  /** A shell-integration marker passed by on the output path. */
  marker: Marker;
  /** A command a process host ran started or ended (the bash API's; a shell's commands come as markers). */
  command: { phase: 'started' | 'ended'; command: string; exitCode: number | null };
  /** The floor refused an agent's action. */
  refused: { action: TerminalAction; by: Actor };
  /** `reason` when ptydeck or a bulk action changed it (a pause, a lease that ran out), for people and agents to read. */
  floor: { mode: FloorMode; by: Actor; reason: string | null };
  /** The title set through the API changed (null: cleared, the program's window title or command shows again). */
  title: { title: string | null; by: Actor };
  resized: { cols: number; rows: number; by: Actor };
  signal: { signal: string; by: Actor; delivered: boolean; targetPgid: number | null };
  exit: ProcessExit;
  closed: TeardownReport & { by: Actor };
  /** A line waits for a decision (line-gate.ts), or was decided after waiting, or was refused. */
  gate: GateEvent;
}

/** Builds the process a session runs on when it is not a shell (see `Session.host`). */
export type HostFactory = (session: Session, env: Record<string, string>) => TerminalProcess;

/** The terminal's program is not reading its input, and enough already waits for it. */
export class InputBacklogError extends Error {
  constructor(pending: number) {
    super(
      `The terminal is not taking input: ${pending} bytes already wait for its program to read them; retry once it reads (or interrupt it)`,
    );
    this.name = 'InputBacklogError';
  }
}

export class UnsupportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedError';
  }
}

/**
 * One terminal: a shell behind a backend, its output log, its screen, its commands and its floor.
 * Every door (AIO, execd, native, MCP, viewer) is a thin adapter over this object.
 *
 * The output path, in order, for each chunk the backend delivers:
 *   1. append to the log (absolute offsets)      3. remember the time (idle, no_change_timeout)
 *   2. scan for markers and terminal queries     4. tell the hub; it pumps every attached cursor
 * The screen mirror parses later, off this path (screen.ts).
 */
export class Session {
  readonly events = new Emitter<SessionEvents>();
  readonly log: OutputLog;
  readonly hub: OutputHub;
  readonly floor: Floor;
  readonly commands: CommandTracker;
  readonly createdAt: Date;
  lastUsedAt = new Date();
  cols: number;
  rows: number;
  noChangeTimeoutSecs: number;
  exit: ProcessExit | null = null;
  closed = false;
  /** The readiness monitor's view: the foreground program is blocked reading the terminal. */
  waitingForInput = false;
  /** While waiting for input: the screen line the program waits on. */
  prompt: string | null = null;
  /** How the shell was started: 'pty' (a terminal) or 'pipe' (execd pty=0). Null until it starts. */
  mode: 'pty' | 'pipe' | null = null;
  workingDir: string;

  private proc: TerminalProcess | null = null;
  private launch: ShellLaunch | null = null;
  private readonly screenHolder: SessionScreen;
  private scanner: MarkerScanner | null = null;
  private lastOutput = Date.now();
  private lastInput = 0;
  private attachments = 0;
  private viewerAttachments = 0;
  private explicitTitle: string | null;
  /** The program's window title and the log offset where it was set. */
  private windowTitle: { text: string; offset: number } | null = null;
  /** Where the shell last finished drawing its prompt (B marker): titles set after it belong to the command. */
  private promptEnd = -1;
  private floorWhy: string | null = null;
  private floorLeaseExpiresAt: number | null = null;
  private scriptDir: string | null = null;
  private closing: Promise<TeardownReport> | null = null;
  private sending = false;
  /** The terminal's sizes by log offset, so a mirror made late applies each resize where it happened. */
  private readonly sizeHistory: { offset: number; cols: number; rows: number }[] = [];
  /** Clock ticks at the shell's start (for teardown: nothing older carries this session's tag). */
  private shellStartTime: number | undefined;
  private throttled = false;
  private throttleTimer: NodeJS.Timeout | null = null;
  /** Taken back after a restart: held for the clients of the server that died until one returns. */
  private restartHold: { reader: RestartHold; timer: NodeJS.Timeout } | null = null;
  /** The pid clock when the shell started (teardown reads only processes younger than it). */
  private pidMark: { pid: number; wraps: number } | undefined;
  /** The session's process group (a cgroup where the machine allows); made when the shell starts. */
  private group: ProcessGroup | null = null;
  /** The exit status the shell announced in its EXIT trap, if it did. */
  private reportedExitCode: number | null = null;
  private readonly envTag: string;
  private readonly shellKind: ShellKind;
  /** Present when lines typed here must be asked about first (an agent's session, a gate registered). */
  private readonly gate: LineGateLink | null;
  /** The shell asks itself (bash's hook); otherwise the doors ask before typing. */
  private gateInShell = false;

  constructor(
    readonly spec: SessionSpec,
    private readonly backends: SessionBackends,
    /** Told of every byte appended, so the sessions' shared memory budget can act in time. */
    private readonly memory: { noteGrowth(bytes: number): void } | null = null,
    gateHost?: GateHost,
    /** Where the session's processes are kept so that none escapes its close (process-tracking.ts). */
    private readonly tracker: ProcessTracker = environmentTracker,
  ) {
    this.createdAt = spec.createdAt ? new Date(spec.createdAt) : new Date();
    this.cols = spec.cols;
    this.rows = spec.rows;
    this.noChangeTimeoutSecs = spec.noChangeTimeoutSecs;
    this.workingDir = spec.cwd;
    this.log = new OutputLog(spec.logBytes);
    this.hub = new OutputHub(() => {
      this.screenHolder.noteOutput();
      this.checkThrottle();
    });
    this.floor = new Floor(spec.floor);
    this.explicitTitle = normalTitle(spec.title);
    this.envTag = spec.identity?.envTag ?? `PTYDECK_SESSION=${spec.id}:${randomBytes(8).toString('hex')}`;
    this.shellKind = findShell(spec.shell).kind;
    const self = this;
    this.commands = new CommandTracker({
      log: this.log,
      get shellKind() {
        return self.launch?.kind ?? self.shellKind;
      },
      scriptDir: () => this.ensureScriptDir(),
      isAlive: () => this.isAlive,
      typeKeys: (text, writer, command) => this.typeKeys(text, writer, 'exec', command),
      signalForeground: (signal) => this.signalForeground(signal, SYSTEM).delivered,
      lastOutputAt: () => this.lastOutput,
      heldMs: () => this.heldMs(),
      isHeld: () => this.held,
      changed: () => this.changed(),
    });
    this.gate = gateHost?.appliesTo(spec.owner) ? new LineGateLink(this, gateHost) : null;
    this.screenHolder = new SessionScreen({
      log: this.log,
      scrollbackLines: spec.scrollbackLines ?? ScreenConstants.DefaultScrollbackLines,
      sizes: () => ({ first: this.sizeAt(this.log.start), after: this.sizeHistory }),
      answerSink: () => this.queryAnswerSink(),
      watched: () => this.viewerAttachments > 0,
      holding: () => this.sending,
      grew: (bytes) => this.memory?.noteGrowth(bytes),
    });
    this.events.on('gate', (e) => this.commands.onGate(e));
  }

  get id(): string {
    return this.spec.id;
  }

  get owner(): string {
    return this.spec.owner;
  }

  get backendKind(): BackendKind {
    if (this.mode === 'pipe') return 'pipe';
    return this.spec.backend === 'tmux' || this.spec.backend === 'host' ? this.spec.backend : this.backends.pty.kind;
  }

  /** Its terminal outlives ptydeck (PTY host or tmux): quitting leaves it running for the next start. */
  get isDurable(): boolean {
    const kind = this.backendKind;
    return kind === 'tmux' || kind === 'host';
  }

  private get durableBackend(): DurableBackend | undefined {
    const kind = this.backendKind;
    return kind === 'tmux' || kind === 'host' ? this.backends.durable[kind] : undefined;
  }

  /** What a restart needs to take this session back (null until its shell has an identity). */
  savedState(): SavedSession | null {
    const identity = this.identity;
    if (this.closed || !identity) return null;
    return {
      id: this.id,
      owner: this.owner,
      origin: this.spec.origin,
      cwd: this.spec.cwd,
      cols: this.cols,
      rows: this.rows,
      createdAt: this.createdAt.toISOString(),
      noChangeTimeoutSecs: this.noChangeTimeoutSecs,
      retention: this.spec.retention,
      floor: this.floor.mode,
      nonce: identity.nonce,
      envTag: identity.envTag,
      title: this.explicitTitle,
      ...(identity.gateHook ? { gateHook: true } : {}),
      ...(this.spec.command !== undefined ? { command: this.spec.command } : {}),
      ...(identity.cgroup ? { cgroup: identity.cgroup } : {}),
      ...(this.rcDir ? { rcDir: this.rcDir } : {}),
    };
  }

  private get rcDir(): string | undefined {
    return this.launch ? shellRcDirOf(this.launch.env) : this.spec.identity?.rcDir;
  }

  /** What a restart needs to recognise this session's markers and processes again. */
  get identity(): { nonce: string; envTag: string; gateHook: boolean; cgroup: string | null } | null {
    const nonce = this.launch?.nonce ?? this.spec.identity?.nonce ?? (this.spec.command !== undefined ? '' : undefined);
    return nonce !== undefined ? { nonce, envTag: this.envTag, gateHook: this.gateInShell, cgroup: this.group?.path ?? this.spec.identity?.cgroup ?? null } : null;
  }

  /** How this session's processes are found (for ending them, also after a crash): null before the shell starts. */
  get processIdentity(): { envTag: string; notBefore: number | null; cgroup: string | null } | null {
    if (!this.proc) return null;
    return { envTag: this.envTag, notBefore: this.shellStartTime ?? null, cgroup: this.group?.path ?? null };
  }

  get started(): boolean {
    return this.proc !== null;
  }

  get isAlive(): boolean {
    return this.proc !== null && this.exit === null && !this.closed;
  }

  /** The terminal process itself (for diagnostics: why a backend could not start it). */
  get process(): TerminalProcess | null {
    return this.proc;
  }

  get pid(): number | null {
    return this.proc?.pid ?? null;
  }

  get attachedClients(): number {
    return this.attachments;
  }

  get lastOutputAt(): number {
    return this.lastOutput;
  }

  /** Why the floor is what it is, when ptydeck or a bulk action set it (see setFloor). */
  get floorReason(): string | null {
    return this.floorWhy;
  }

  /** When anyone last wrote to the terminal (epoch ms; 0: never). */
  get lastInputAt(): number {
    return this.lastInput;
  }

  /** What to call this session, and where that came from (see SessionSummary.title). */
  get title(): { title: string | null; source: TitleSource | null } {
    if (this.explicitTitle) return { title: this.explicitTitle, source: 'set' };
    if (this.windowTitle) return { title: this.windowTitle.text, source: 'window' };
    const running = this.commands.current;
    if (running && running.status === 'running' && running.command) return { title: cleanWindowTitle(running.command), source: 'command' };
    return { title: null, source: null };
  }

  get shellState(): ShellState {
    if (!this.proc) return 'starting';
    return this.commands.state;
  }

  /**
   * The headless screen, made on first use (a snapshot, a viewport, a terminal query): an idle session
   * that nobody looks at costs no emulator. Made late, it still applies each resize at its offset.
   */
  get screen(): ScreenMirror {
    return this.screenHolder.get();
  }

  /** Memory of the headless screen, 0 when there is none (for the memory budget). */
  get screenBytes(): number {
    return this.screenHolder.bytes;
  }

  get logResidentBytes(): number {
    return this.log.residentBytes;
  }

  get lastActiveAt(): number {
    return Math.max(this.lastOutput, this.lastUsedAt.getTime());
  }

  /**
   * Drops the headless screen unless a person's tab shows it, a send holds a place in it, or it was
   * used less than `unusedForMs` ago; the next look rebuilds it from the log. Returns the bytes freed.
   */
  dropScreen(unusedForMs = 0): number {
    return this.screenHolder.drop(unusedForMs);
  }

  spillLog(keepBytes: number, wanted: number, dir: string | null): number {
    return this.log.spillCold(keepBytes, wanted, dir);
  }

  spillsLanded(): Promise<void> {
    return this.log.spillsLanded();
  }

  /** The headless screen answers terminal queries, unless the terminal does (tmux) or there is no PTY. */
  private queryAnswerSink(): QueryAnswerSink | null {
    const proc = this.proc;
    if (!proc || !proc.isTty || proc.answersQueries) return null;
    return {
      write: (reply) => {
        if (this.isAlive) proc.write(reply);
      },
      // Answers wait behind input the program has not read: while any waits, they are dropped.
      draining: () => (proc.pendingInputBytes ?? 0) === 0,
    };
  }

  private sizeAt(offset: number): { cols: number; rows: number } {
    let size = { cols: this.spec.cols, rows: this.spec.rows };
    for (const r of this.sizeHistory) if (r.offset <= offset) size = r;
    return size;
  }

  /** Starts the shell. Sessions from execd's POST /pty wait for their first socket to choose the mode. */
  start(mode: 'pty' | 'pipe' = 'pty'): void {
    if (this.proc || this.closed) return;
    this.mode = mode;
    const extraEnv = this.childEnv();
    let file: string;
    let args: string[];
    let env: Record<string, string>;
    if (this.spec.command !== undefined || mode === 'pipe') {
      // Not an interactive prompt: no shell integration, so no exec; the terminal (or pipes) still work.
      file = findShell(this.spec.shell).file;
      // --norc: bash reads ~/.bashrc even for -c when its stdin is a socket (pipes) and SHLVL is below 1.
      const norc = file.endsWith('bash') ? ['--norc'] : [];
      args = this.spec.command !== undefined ? [...norc, '-c', this.spec.command] : norc.length ? [...norc, '--noprofile'] : [];
      env = childEnvironment(process.env, extraEnv);
      this.commands.state = 'busy';
    } else {
      const hook = this.gate && this.shellKind === 'bash' ? { portFile: this.gate.portFile } : undefined;
      this.launch = prepareShell({ shell: this.spec.shell, loadUserRc: this.spec.loadUserRc, baseEnv: process.env, extraEnv, lineGate: hook });
      if (hook) this.listenToGate(this.launch.nonce);
      file = this.launch.file;
      args = this.launch.args;
      env = this.launch.env;
      this.followShellIntegration(this.launch.nonce);
    }
    const backend = mode === 'pipe' ? this.backends.pipe : this.ptyBackend();
    // The shell enters the session's cgroup before it runs anything: whatever it starts stays findable.
    // Only the file and arguments change, so every backend (in-process, PTY host, tmux, pipes) gets it.
    this.group = this.tracker.create();
    const spawn = this.group.wrap({ file, args });
    const spawnSpec = { sessionId: this.id, file: spawn.file, args: spawn.args, cwd: this.spec.cwd, env, cols: this.cols, rows: this.rows };
    const durable = backend.kind === 'host' || backend.kind === 'tmux';
    const proc = backend.spawn(durable ? { ...spawnSpec, record: this.savedState() ?? undefined, logBytes: this.spec.logBytes } : spawnSpec);
    this.attachProcess(proc);
  }

  /**
   * Runs the session on a process host built for it instead of a shell: the bash API's, which starts one
   * process per command on pipes. There is no prompt, so nothing is typed and `exec` is the host's own.
   */
  host(build: HostFactory): void {
    if (this.proc || this.closed) return;
    this.mode = 'pipe';
    this.commands.state = 'prompt';
    this.attachProcess(build(this, childEnvironment(process.env, this.childEnv())));
    // No shell: every process that carries the tag is this session's, whenever it started.
    this.shellStartTime = 0;
  }

  /** What every process of this session gets in its environment: the caller's variables, its id, its tag. */
  private childEnv(): Record<string, string> {
    const extraEnv: Record<string, string> = { ...(this.spec.env ?? {}), PTYDECK_SESSION_ID: this.id };
    const [tagName, tagValue] = splitOnce(this.envTag, '=');
    extraEnv[tagName] = tagValue;
    return extraEnv;
  }

  /**
   * Takes over a terminal that an earlier ptydeck started (PTY host or tmux): the output its backend
   * still holds is read into the log at the same offsets, so markers, commands and the screen are
   * rebuilt from it.
   */
  adopt(proc: AdoptableProcess): void {
    if (this.proc) return;
    this.mode = 'pty';
    this.group = this.tracker.open(this.spec.identity?.cgroup ?? null);
    const nonce = this.spec.identity?.nonce;
    if (nonce) this.followShellIntegration(nonce);
    // Its hook (if an earlier ptydeck gave it one) finds this server through the port file.
    if (nonce && this.gate && this.spec.identity?.gateHook) this.listenToGate(nonce);
    this.log.startAt(proc.initialOffset);
    this.attachProcess(proc);
    // Only a terminal read in another process runs ahead of its readers (see checkThrottle).
    if (proc.throttle) {
      const reader = new RestartHold(this.log, proc.initialOffset);
      this.restartHold = { reader, timer: setTimeout(() => this.endRestartHold(), StreamConstants.RestartHoldMs) };
      this.restartHold.timer.unref();
      this.hub.attach(reader);
      // Right behind the ATTACH: the host keeps what the clients coming back may want from the start.
      this.checkThrottle();
    }
  }

  /** A client is back (it holds the terminal back itself from now on), or the wait for them is over. */
  private endRestartHold(): void {
    const hold = this.restartHold;
    if (!hold) return;
    this.restartHold = null;
    clearTimeout(hold.timer);
    this.hub.detach(hold.reader);
    this.checkThrottle();
  }

  private attachProcess(proc: TerminalProcess): void {
    this.proc = proc;
    // A terminal started in another process has its pid a moment later.
    const noteShell = (): void => {
      if (proc.pid <= 0) return;
      this.shellStartTime = readStat(proc.pid)?.startTime;
      // An adopted shell may be older than a pid wrap this process never saw: no mark, full scans.
      if (this.spec.restored !== true) this.pidMark = { pid: proc.pid, wraps: pidClock.wraps };
    };
    if (proc.pid > 0) noteShell();
    else void proc.started?.then(noteShell);
    // A mirror made before the process existed could not answer queries; the next use makes a new one.
    this.screenHolder.discard();
    proc.onData((data, channel, offset) => this.onOutput(data, channel, offset));
    proc.onExit((e) => this.onExit(e));
    (proc as Partial<AdoptableProcess>).begin?.();
    this.changed();
  }

  private ptyBackend(): Backend {
    const kind = this.spec.backend;
    if (kind !== 'tmux' && kind !== 'host') return this.backends.pty;
    const backend = this.backends.durable[kind];
    if (!backend) throw new UnsupportedError(`this session asks for the ${kind === 'host' ? 'PTY host' : 'tmux'} backend, which is not available`);
    return backend;
  }

  /** ptydeck is quitting: stop following a durable terminal but leave it running. */
  detach(): void {
    (this.proc as Partial<AdoptableProcess> | null)?.detach?.();
    this.closed = true;
    // A shell that already ended (its tmux session killed while ptydeck was down, say) needs nothing kept.
    this.dispose(this.exit === null);
  }

  /** Resolves once the shell has printed its first prompt (immediately for non-interactive sessions). */
  async ready(timeoutMs: number = CommandConstants.ShellStartTimeoutMs): Promise<boolean> {
    await this.proc?.started;
    if (!this.launch) return this.isAlive;
    return this.commands.whenReady(timeoutMs);
  }

  /**
   * Throws FloorRefusedError when the floor does not let `by` do `action` now, after telling subscribers
   * (the viewer counts refusals). Every change to the terminal passes here first.
   */
  authorize(by: Actor, action: TerminalAction): void {
    if (this.floor.allows(by, action)) return;
    this.events.emit('refused', { action, by });
    this.changed();
    throw new FloorRefusedError(action);
  }

  /**
   * Writes bytes to the terminal as one write, if the floor lets `by` type. Refused while more than
   * InputConstants.MaxPendingBytes wait for a program that is not reading (ptydeck's own keys still go).
   * `lineChecked`: the line was already asked about at the door (a send into a shell without the hook).
   */
  write(data: string | Uint8Array, by: Actor, lineChecked = false): void {
    this.typeKeys(data, by, 'input', undefined, lineChecked);
  }

  private typeKeys(data: string | Uint8Array, by: Actor, action: TerminalAction, command?: string, lineChecked = false): void {
    this.authorize(by, action);
    if (this.closed) throw new NotActiveError('it has been closed');
    if (!this.proc) this.start();
    if (!this.isAlive) throw new NotActiveError(`its shell has exited${this.exit?.exitCode != null ? ` with code ${this.exit.exitCode}` : ''}`);
    const pending = this.proc!.pendingInputBytes ?? 0;
    if (by.kind !== 'system' && pending > InputConstants.MaxPendingBytes) throw new InputBacklogError(pending);
    if (this.gateAtDoor && by.kind === 'agent' && command === undefined && !lineChecked) {
      // No hook reads this line: an agent's Enter waits at the door until its line is allowed.
      this.gate!.typeAtDoor(data, by, (d) => this.typeNow(d, by, command), (text) => this.showNotice(text));
      return;
    }
    this.typeNow(data, by, command);
  }

  private typeNow(data: string | Uint8Array, by: Actor, command?: string): void {
    if (!this.isAlive) return;
    const offset = this.log.end;
    this.lastInput = Date.now();
    // Published just before the write: a subscriber sees the terminal as these bytes will find it (is
    // it echoing? the timeline keeps a password typed at a prompt that does not echo out of its records).
    this.events.emit('input', { data, by, offset, command });
    this.proc!.write(data);
  }

  /**
   * Whether the doors ask about an agent's typed line: the shell has no hook (dash), or something other
   * than the hooked shell's prompt will read it (a program runs: a REPL, or a shell the agent started,
   * `bash --norc`, `exec env -i bash`, which has no hook and never gives the prompt back).
   */
  private get gateAtDoor(): boolean {
    return this.gate !== null && (!this.gateInShell || this.commands.state === 'busy');
  }

  private listenToGate(nonce: string): void {
    this.gateInShell = true;
    this.gate?.listen(nonce);
  }

  /**
   * A line of ptydeck's own on the terminal (a refusal at the door), as if the terminal printed it. Not
   * on a terminal that outlives ptydeck (the PTY host, tmux): its log offsets are the backend's own, and
   * a line of ours would shift them.
   */
  private showNotice(text: string): void {
    if (!this.durableBackend) this.onOutput(Buffer.from(`\r\n${text}\r\n`), 1);
  }

  async exec(command: string, opts: ExecOptions) {
    if (!this.proc) this.start();
    // Shell integration (markers) is what exec needs: a started shell has it, and so has an adopted one.
    if (!this.scanner) throw new UnsupportedError('exec needs an interactive shell on a terminal; this session runs a single command or pipes');
    this.authorize(opts.writer, 'exec');
    if (this.gate && !this.gateInShell) await this.gate.checkAtDoor(command, opts.writer);
    return this.commands.exec(command, { ...opts, noChangeTimeoutSecs: opts.noChangeTimeoutSecs ?? this.noChangeTimeoutSecs });
  }

  /** One interactive send at a time (send.ts). */
  async send(opts: SendOptions): Promise<SendResult> {
    if (this.sending) throw new SendActiveError();
    this.sending = true;
    try {
      return await runSend(this, opts);
    } finally {
      this.sending = false;
    }
  }

  /** Whether a line here waits for a person's decision now (exec and send stop their clocks meanwhile). */
  get held(): boolean {
    return this.gate?.held ?? false;
  }

  heldMs(): number {
    return this.gate?.heldMs() ?? 0;
  }

  /** The door-level gate (no hook reads the line, see gateAtDoor) for a send's line; the hook asks by itself. */
  async checkLineAtDoor(text: string, by: Actor): Promise<void> {
    if (this.gateAtDoor) await this.gate!.checkAtDoor(text, by);
  }

  /** Input written and not yet taken by the terminal (undefined: the backend cannot tell). */
  get pendingInputBytes(): number | undefined {
    return this.proc?.pendingInputBytes;
  }

  /** The backend can tell when every byte the terminal holds has reached the log (see drainOutput). */
  get canDrain(): boolean {
    return typeof this.proc?.drain === 'function';
  }

  /** Resolves once every byte the terminal held at the call is in the log. */
  async drainOutput(): Promise<void> {
    await this.proc?.drain?.();
  }

  /** The wait monitor's verdict, with the line the program waits on (manager.ts, wait-monitor.ts). */
  setWaitingForInput(waiting: boolean, prompt: string | null = null): void {
    const p = waiting ? prompt : null;
    if (waiting === this.waitingForInput && p === this.prompt) return;
    this.waitingForInput = waiting;
    this.prompt = p;
    this.changed();
  }

  /** Names the session (null or '' clears it). Not a floor matter: it changes no terminal, only its label. */
  rename(title: string | null, by: Actor): void {
    const t = normalTitle(title);
    if (t === this.explicitTitle) return;
    this.explicitTitle = t;
    this.events.emit('title', { title: t, by });
    this.changed();
  }

  resize(cols: number, rows: number, by: Actor = SYSTEM): void {
    this.authorize(by, 'resize');
    const c = clampInt(cols, 1, SessionConstants.MaxCols);
    const r = clampInt(rows, 1, SessionConstants.MaxRows);
    if (c === this.cols && r === this.rows) return;
    this.cols = c;
    this.rows = r;
    this.sizeHistory.push({ offset: this.log.end, cols: c, rows: r });
    // Only the size in effect at the log's start and the ones after it matter to a mirror made later.
    while (this.sizeHistory.length > 1 && this.sizeHistory[1].offset <= this.log.start) this.sizeHistory.shift();
    if (this.sizeHistory.length > 256) this.sizeHistory.splice(0, this.sizeHistory.length - 256);
    this.screenHolder.noteResize(c, r);
    this.proc?.resize(c, r);
    this.events.emit('resized', { cols: c, rows: r, by });
    this.changed();
  }

  /** Changes the floor; `reason` says why when it was not the person's own choice on this tab. */
  setFloor(mode: FloorMode, by: Actor, reason: string | null = null): void {
    if (!this.floor.set(mode)) {
      if (reason !== this.floorWhy && reason !== null) {
        this.floorWhy = reason;
        this.changed();
      }
      return;
    }
    this.floorWhy = reason;
    // A lease only runs while the person holds the floor.
    if (mode !== 'takeover') this.floorLeaseExpiresAt = null;
    this.events.emit('floor', { mode, by, reason });
    this.changed();
  }

  /** When the person's hold ends by itself, if no viewer of theirs comes back (the deck's floor lease); null: no lease running. */
  setFloorLease(expiresAt: number | null): void {
    const at = this.floor.mode === 'takeover' ? expiresAt : null;
    if (at === this.floorLeaseExpiresAt) return;
    this.floorLeaseExpiresAt = at;
    this.changed();
  }

  touch(): void {
    this.lastUsedAt = new Date();
  }

  /** Registers an attached client (a socket; `viewer` when it is the person's terminal tab); the returned function detaches it. */
  attach(reader?: OutputReader, opts: { viewer?: boolean } = {}): () => void {
    this.attachments++;
    if (opts.viewer) this.viewerAttachments++;
    if (reader) this.hub.attach(reader);
    if (reader?.holdsBackTerminal) this.endRestartHold();
    this.touch();
    this.changed();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.attachments--;
      if (opts.viewer) this.viewerAttachments--;
      if (reader) this.hub.detach(reader);
      this.touch();
      this.changed();
    };
  }

  /**
   * Signals the terminal's foreground process group as it is right now (never a guessed pid).
   * Refuses SIGKILL when that group is the shell's own: closing the session is the way to end it.
   * With `programOnly`, a shell at its prompt (its own group in the foreground) is not signalled at all,
   * and the answer says no program was running (`noProgram`).
   */
  signalForeground(
    signal: NodeJS.Signals,
    by: Actor,
    opts: { allowShellKill?: boolean; programOnly?: boolean } = {},
  ): { delivered: boolean; targetPgid: number | null; refused?: string; noProgram?: boolean } {
    this.authorize(by, 'signal');
    const r = this.deliverSignal(signal, opts);
    if (!r.refused) this.events.emit('signal', { signal, by, delivered: r.delivered, targetPgid: r.targetPgid });
    return r;
  }

  private deliverSignal(
    signal: NodeJS.Signals,
    opts: { allowShellKill?: boolean; programOnly?: boolean },
  ): { delivered: boolean; targetPgid: number | null; refused?: string; noProgram?: boolean } {
    const pid = this.proc?.pid;
    if (!pid || !this.isAlive) return { delivered: false, targetPgid: null, refused: 'the session is not running' };
    if (!this.proc!.isTty || !hasProcfs) {
      // No terminal (pipes) or no /proc: the shell leads its own group.
      const target = readStat(pid)?.pgrp ?? pid;
      return { delivered: signalGroup(target, signal), targetPgid: target };
    }
    const pgid = foregroundPgid(pid);
    if (pgid === null) return { delivered: false, targetPgid: null, refused: 'the terminal has no foreground process group' };
    const shellPgid = readStat(pid)?.pgrp ?? pid;
    if (pgid === shellPgid && opts.programOnly) return { delivered: false, targetPgid: null, noProgram: true };
    if (pgid === shellPgid && signal === 'SIGKILL' && !opts.allowShellKill) {
      return { delivered: false, targetPgid: pgid, refused: "SIGKILL would kill the session's own shell; close the session instead" };
    }
    return { delivered: signalGroup(pgid, signal), targetPgid: pgid };
  }

  /** The shell's current directory (Linux reads it from /proc; elsewhere the directory it started in). */
  currentDir(): string {
    const pid = this.proc?.pid;
    if (pid && this.isAlive && hasProcfs) {
      try {
        return readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // fall through
      }
    }
    return this.workingDir;
  }

  summary(): SessionSummary {
    const cmd = this.commands.latest;
    const title = this.title;
    return {
      id: this.id,
      owner: this.owner,
      title: title.title,
      titleSource: title.source,
      backend: this.backendKind,
      origin: this.spec.origin,
      createdAt: this.createdAt.toISOString(),
      lastUsedAt: this.lastUsedAt.toISOString(),
      cols: this.cols,
      rows: this.rows,
      cwd: this.currentDir(),
      shellState: this.exit || this.closed ? 'exited' : this.shellState,
      exitCode: this.exit?.exitCode ?? null,
      floor: this.floor.mode,
      controller: this.floor.controller,
      floorReason: this.floorWhy,
      floorLeaseExpiresAt: this.floorLeaseExpiresAt === null ? null : new Date(this.floorLeaseExpiresAt).toISOString(),
      refusals: this.floor.refusals.count,
      refusedBy: Object.entries(this.floor.refusals.byAgent).map(([agent, r]) => ({ agent, count: r.count, actions: [...r.actions], last: r.last })),
      command: cmd ? cmd.info() : null,
      waitingForInput: this.waitingForInput,
      prompt: this.prompt,
      attached: this.attachments,
      viewers: this.viewerAttachments,
      durable: this.isDurable,
      restored: this.spec.restored === true,
    };
  }

  /** Ends the session and its whole process tree. Idempotent: later calls get the same report. */
  close(by: Actor = SYSTEM): Promise<TeardownReport> {
    if (this.closing) return this.closing;
    this.authorize(by, 'close');
    this.closed = true;
    this.closing = (async () => {
      let report: TeardownReport = { signalled: 0, survivors: [], trackedBy: this.group?.kind ?? this.tracker.kind };
      const group = this.group ?? undefined;
      if (this.proc && !this.exit) {
        const proc = this.proc;
        report = await teardownTree(
          { shellPid: proc.pid, envTag: this.envTag, notBefore: this.shellStartTime, pidMark: this.pidMark, group },
          { graceMs: this.spec.teardownGraceMs, killShell: () => proc.kill('SIGHUP') },
        );
      } else if (this.proc) {
        // The shell is gone, but what it started may not be.
        report = await teardownTree({ shellPid: -1, envTag: this.envTag, notBefore: this.shellStartTime, pidMark: this.pidMark, group }, { graceMs: this.spec.teardownGraceMs });
      }
      // What the shell printed as it ended is in the log before `closed` says the session is over.
      await this.drainOutput();
      if (this.isDurable) this.durableBackend?.destroy(this.id);
      this.dispose();
      this.events.emit('closed', { ...report, by });
      return report;
    })();
    this.changed();
    return this.closing;
  }

  /** Synchronous last resort on process exit. */
  killNow(): void {
    // Durable sessions are meant to outlive ptydeck.
    if (!this.proc || this.isDurable) return;
    killTreeSync({ shellPid: this.exit ? -1 : this.proc.pid, envTag: this.envTag, notBefore: this.shellStartTime, group: this.group ?? undefined });
    this.proc.kill('SIGKILL');
    this.dispose();
  }

  /**
   * A terminal read in another process (the PTY host) outruns a slow agent socket here: hold it back
   * while such a socket lags far behind but reads on, as a real terminal's slow reader would.
   */
  private checkThrottle(): void {
    const proc = this.proc;
    if (!proc?.throttle) return;
    const now = Date.now();
    // What an agent socket has not handed to the kernel must survive a restart of this process (the
    // host keeps it) and the flood the host sent before it was held (this log keeps it).
    const keep = this.hub.keepFrom(now);
    this.log.keepFrom = keep;
    proc.keepFrom?.(Math.min(keep, this.log.end));
    const lag = this.hub.throttleLag(now);
    const above = Math.min(StreamConstants.ThrottleAboveBytes, this.log.capacity / 4);
    if (!this.throttled && lag > above) {
      this.throttled = true;
      proc.throttle(true);
      const recheck = (): void => {
        if (!this.throttled) return;
        this.checkThrottle();
        if (this.throttled) this.throttleTimer = setTimeout(recheck, StreamConstants.ThrottleCheckMs);
      };
      this.throttleTimer = setTimeout(recheck, StreamConstants.ThrottleCheckMs);
    } else if (this.throttled && lag < Math.min(StreamConstants.ThrottleResumeBytes, above / 2)) {
      this.throttled = false;
      if (this.throttleTimer) clearTimeout(this.throttleTimer);
      this.throttleTimer = null;
      proc.throttle(false);
    }
  }

  private onOutput(data: Buffer, channel: number, at?: number): void {
    // A backend that numbers its bytes (the PTY host) may have dropped some we never got: skip to them.
    if (at !== undefined && at > this.log.end) this.log.skipTo(at);
    const offset = this.log.end;
    this.log.append(data, channel);
    this.memory?.noteGrowth(data.length);
    this.scanner?.feed(data, offset);
    this.lastOutput = Date.now();
    this.events.emit('output', { data, offset, channel });
    this.hub.notify(data.length);
  }

  /**
   * Watches the output for this shell's markers. A terminal query is answered by the screen (made now
   * if need be), unless tmux is the terminal: then the screen only catches up and tmux answers.
   */
  private followShellIntegration(nonce: string): void {
    this.scanner = new MarkerScanner(
      nonce,
      (m) => this.onMarker(m),
      (at) => this.screen.noteQuery(at),
      (title, offset) => this.onWindowTitle(title, offset),
    );
  }

  private onWindowTitle(raw: string, offset: number): void {
    const text = cleanWindowTitle(raw);
    if (text === (this.windowTitle?.text ?? null)) return;
    this.windowTitle = text === null ? null : { text, offset };
    if (!this.explicitTitle) this.changed();
  }

  private onMarker(m: Marker): void {
    if (m.kind === 'X') this.reportedExitCode = m.exitCode;
    if (m.kind === 'B') this.promptEnd = m.end;
    // A program's title (vim's, say) names it while it runs; once its command ends it would name
    // nothing. A title the prompt itself sets (before B) stays.
    if (m.kind === 'D' && this.windowTitle && this.windowTitle.offset > this.promptEnd) {
      this.windowTitle = null;
      if (!this.explicitTitle) this.changed();
    }
    this.commands.onMarker(m);
    this.events.emit('marker', m);
  }

  private onExit(e: ProcessExit): void {
    if (this.exit) return;
    // A backend that could not tell the status (tmux, at times) takes the one the shell reported.
    this.exit = e.exitCode === null && e.signal === null && this.reportedExitCode !== null ? { exitCode: this.reportedExitCode, signal: null } : e;
    this.hub.flush();
    this.commands.onShellExit();
    this.events.emit('exit', e);
    this.changed();
  }

  private changed(): void {
    this.events.emit('changed', this);
  }

  private ensureScriptDir(): string | null {
    if (!this.scriptDir) {
      try {
        this.scriptDir = mkdtempSync(join(tmpdir(), 'ptydeck-cmd-'));
      } catch {
        return null;
      }
    }
    return this.scriptDir;
  }

  /** `shellGoesOn`: a durable shell left running keeps its rc directory (a gated shell's scratch files are there). */
  private dispose(shellGoesOn = false): void {
    if (this.throttleTimer) clearTimeout(this.throttleTimer);
    this.throttleTimer = null;
    if (this.restartHold) clearTimeout(this.restartHold.timer);
    this.restartHold = null;
    (this.proc as Partial<AdoptableProcess> | null)?.detach?.();
    // Whoever launched the shell (this server, or an earlier one a restored session's record names).
    if (!shellGoesOn) removeShellRcDir(this.rcDir);
    try {
      if (this.scriptDir) rmSync(this.scriptDir, { recursive: true, force: true });
    } catch {
      // The shell (the same user) may have made something in it that cannot be removed: the close goes on.
    }
    this.scriptDir = null;
    this.screenHolder.discard();
  }
}

function clampInt(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, Math.trunc(n)));
}

function splitOnce(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return [s.slice(0, i), s.slice(i + 1)];
}
