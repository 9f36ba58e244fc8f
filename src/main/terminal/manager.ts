import { randomUUID } from 'node:crypto';
import { homedir } from 'node:os';
import type { Backend } from './backends/backend';
import { NodePtyBackend } from './backends/node-pty-backend';
import { PipeBackend } from './backends/pipe-backend';
import { SegmentBytes } from './backends/segment-tailer';
import { TmuxServer, TmuxUnavailableError, tmuxAvailability } from './backends/tmux';
import { TmuxBackend } from './backends/tmux-backend';
import { DurableState } from './durable-state';
import { OutputLogConstants, SessionConstants, TeardownConstants, CommandConstants, ScreenConstants, WaitMonitorConstants } from './constants';
import { Emitter } from './emitter';
import { NativeSessionRecords } from './orphans';
import { detectProcessTracker, environmentTracker, type ProcessTracker } from './process-tracking';
import { InvalidRequestError } from './errors';
import { existingDirectory } from './paths';
import { anyTerminalWait, kernelProbeAvailable, probeForeground } from './readiness';
import { SYSTEM, type Actor } from './actor';
import type { FloorMode } from './floor';
import { Session, type SessionSpec } from './session';
import type { TeardownReport } from './teardown';

export interface ManagerConfig {
  /** AIO_SHELL_MAX_SESSIONS: every session, whoever owns it. */
  maxSessions: number;
  /** PTYDECK_MAX_SESSIONS_PER_AGENT: what one agent may hold, so that it cannot starve the others. */
  maxSessionsPerAgent: number;
  /** The owner name of the person's own sessions: they count against the global limit only, and have room kept for them. */
  personOwner: string;
  idleTimeoutSecs: number;
  logBytes: number;
  scrollbackLines: number;
  noChangeTimeoutSecs: number;
  teardownGraceMs: number;
  defaultCwd: string;
  shell?: string;
  /** AIO_SHELL_BACKEND: auto picks tmux for explicitly created sessions when a working tmux is found. */
  backend: 'auto' | 'tmux' | 'native';
  /** Where durable state lives (ptydeck's tmux server, the state files); null turns the tmux backend off. */
  stateDir: string | null;
  /**
   * PTYDECK_PROCESS_TRACKING: 'auto' keeps each session's processes in a cgroup of its own where the
   * machine allows one; 'environment' never makes cgroups (teardown then relies on the environment tag).
   */
  processTracking: 'auto' | 'environment';
}

export const defaultManagerConfig = (): ManagerConfig => ({
  maxSessions: SessionConstants.DefaultMaxSessions,
  maxSessionsPerAgent: SessionConstants.DefaultMaxSessionsPerAgent,
  personOwner: 'admin',
  idleTimeoutSecs: SessionConstants.DefaultIdleTimeoutSecs,
  logBytes: OutputLogConstants.DefaultCapacityBytes,
  scrollbackLines: ScreenConstants.DefaultScrollbackLines,
  noChangeTimeoutSecs: CommandConstants.DefaultNoChangeTimeoutSecs,
  teardownGraceMs: TeardownConstants.GraceMs,
  defaultCwd: homedir(),
  backend: 'auto',
  stateDir: null,
  processTracking: 'auto',
});

export interface CreateRequest {
  id?: string;
  owner: string;
  origin: string;
  cwd?: string | null;
  cols?: number | null;
  rows?: number | null;
  env?: Record<string, string> | null;
  command?: string;
  /** Do not start the shell yet (execd: the first socket starts it and picks pty or pipe mode). */
  lazy?: boolean;
  floor?: FloorMode;
  noChangeTimeoutSecs?: number | null;
  retention?: 'persistent' | 'expiring';
  loadUserRc?: boolean;
  /**
   * Created on purpose (AIO's create routes, /pty, /api, MCP) rather than on the side (an exec without
   * an id, an anonymous socket): only such a session may use tmux, as in AIO.
   */
  explicit?: boolean;
}

export { InvalidRequestError };

/** No room for the requester's new session, and none of its own sessions could be reclaimed. */
export class SessionLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SessionLimitError';
  }
}

/**
 * The id cannot be used by this requester. The same answer whether another principal holds it or not:
 * the message never says the id exists, or whose it is.
 */
export class IdTakenError extends Error {
  constructor(id: string) {
    super(`Session id ${id} is not available; choose another id, or omit id for a generated one`);
    this.name = 'IdTakenError';
  }
}

export interface ManagerEvents extends Record<string, unknown> {
  created: Session;
  changed: Session;
  closed: { session: Session; report: TeardownReport };
}

export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;

/**
 * Owns every session: creates them (idempotently by id), enforces the limits (global, per agent, and
 * the person's reserve) by reclaiming the requester's own least recently used idle session, closes idle
 * ones, keeps each session's processes findable (process-tracking.ts, orphans.ts), and ends them all on
 * shutdown.
 */
export class SessionManager {
  readonly events = new Emitter<ManagerEvents>();
  readonly config: ManagerConfig;
  private readonly sessions = new Map<string, Session>();
  private readonly creating = new Map<string, Promise<{ session: Session; created: boolean }>>();
  /** Who each pending creation is for: they count against that owner's quota until they are sessions. */
  private readonly creatingOwner = new Map<string, string>();
  private readonly backends: { pty: Backend; pipe: Backend; tmux?: TmuxBackend };
  private readonly durable: DurableState | null;
  /** Where each session's processes are kept (process-tracking.ts). */
  readonly tracker: ProcessTracker;
  /** What a crashed predecessor's native sessions left, and ours while they run (orphans.ts). */
  private readonly nativeRecords: NativeSessionRecords | null;
  private readonly reaper: NodeJS.Timeout;
  private readonly waitMonitor: NodeJS.Timeout;
  private readonly waitSeenAt = new WeakMap<Session, number>();

  constructor(config: Partial<ManagerConfig> = {}, backends?: { pty: Backend; pipe?: Backend }) {
    this.config = { ...defaultManagerConfig(), ...config };
    this.backends = { pty: backends?.pty ?? new NodePtyBackend(), pipe: backends?.pipe ?? new PipeBackend() };
    this.durable = this.config.stateDir ? new DurableState(this.config.stateDir) : null;
    this.nativeRecords = this.config.stateDir ? new NativeSessionRecords(this.config.stateDir) : null;
    this.tracker = this.config.processTracking === 'environment' ? environmentTracker : detectProcessTracker();
    if (this.config.backend !== 'native' && this.config.stateDir && tmuxAvailability().ok) {
      // Keep enough segments on disk to refill the whole output log after a restart.
      const keep = Math.ceil(this.config.logBytes / SegmentBytes) + 1;
      this.backends.tmux = new TmuxBackend(new TmuxServer(this.config.stateDir), keep);
    }
    this.reaper = setInterval(() => void this.reapIdle(), Math.min(SessionConstants.ReaperIntervalMs, this.config.idleTimeoutSecs * 1000));
    this.reaper.unref();
    this.waitMonitor = setInterval(() => this.checkWaiting(), WaitMonitorConstants.IntervalMs);
    this.waitMonitor.unref();
  }

  get(id: string): Session | undefined {
    return this.sessions.get(id);
  }

  list(): Session[] {
    return [...this.sessions.values()];
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Creates a session, or returns the existing one with that id when the same principal asks again
   * (`created: false`). Resolves once the shell has printed its first prompt.
   */
  async create(req: CreateRequest): Promise<{ session: Session; created: boolean }> {
    const id = req.id ?? randomUUID();
    if (!SESSION_ID_PATTERN.test(id)) {
      throw new InvalidRequestError('id must be 1-128 characters of letters, digits and _ . : @ -, starting with a letter or digit');
    }
    const existing = this.sessions.get(id) ?? (await this.creating.get(id))?.session;
    if (existing && !existing.closed) {
      if (existing.owner !== req.owner) throw new IdTakenError(id);
      existing.touch();
      return { session: existing, created: false };
    }
    const pending = this.createNew(id, req);
    this.creating.set(id, pending);
    this.creatingOwner.set(id, req.owner);
    try {
      return await pending;
    } finally {
      this.creating.delete(id);
      this.creatingOwner.delete(id);
    }
  }

  private async createNew(id: string, req: CreateRequest): Promise<{ session: Session; created: boolean }> {
    const cwd = await existingDirectory(req.cwd ?? this.config.defaultCwd);
    const cols = req.cols ?? SessionConstants.DefaultCols;
    const rows = req.rows ?? SessionConstants.DefaultRows;
    if (!Number.isInteger(cols) || cols < 1 || cols > SessionConstants.MaxCols) throw new InvalidRequestError(`cols must be an integer from 1 to ${SessionConstants.MaxCols}`);
    if (!Number.isInteger(rows) || rows < 1 || rows > SessionConstants.MaxRows) throw new InvalidRequestError(`rows must be an integer from 1 to ${SessionConstants.MaxRows}`);
    await this.makeRoom(id, req.owner);
    const spec: SessionSpec = {
      id,
      owner: req.owner,
      origin: req.origin,
      cwd,
      cols,
      rows,
      env: req.env ?? undefined,
      command: req.command,
      shell: this.config.shell,
      loadUserRc: req.loadUserRc,
      logBytes: this.config.logBytes,
      scrollbackLines: this.config.scrollbackLines,
      floor: req.floor ?? 'watch',
      noChangeTimeoutSecs: req.noChangeTimeoutSecs ?? this.config.noChangeTimeoutSecs,
      retention: req.retention,
      teardownGraceMs: this.config.teardownGraceMs,
      backend: this.chooseBackend(req),
    };
    const session = new Session(spec, this.backends, this.tracker);
    this.register(session);
    if (!req.lazy) {
      try {
        session.start();
      } catch (err) {
        this.sessions.delete(id);
        throw new InvalidRequestError(`could not start the shell: ${(err as Error).message}`);
      }
      if (!(await session.ready())) {
        const why = session.exit ? `the shell exited with code ${session.exit.exitCode}` : 'the shell printed no prompt in time';
        await session.close();
        throw new InvalidRequestError(`could not start the shell: ${why}`);
      }
    }
    this.events.emit('created', session);
    return { session, created: true };
  }

  private register(session: Session): void {
    const id = session.id;
    this.sessions.set(id, session);
    let recorded = false;
    session.events.on('changed', (s) => {
      if (s.isTmux) this.durable?.save(this.list());
      else if (!recorded && s.processIdentity && !s.closed) {
        // A native session's processes, recorded while they run: a successor reaps them if we crash.
        recorded = true;
        this.nativeRecords?.add({ sessionId: id, ...s.processIdentity });
      }
      this.events.emit('changed', s);
    });
    session.events.on('closed', (report) => {
      if (this.sessions.get(id) === session) this.sessions.delete(id);
      if (session.isTmux) this.durable?.save(this.list());
      // Kept while something survived: the next start tries again.
      else if (recorded && report.survivors.length === 0) this.nativeRecords?.remove(id);
      this.events.emit('closed', { session, report });
    });
  }

  /**
   * Ends what native sessions of a server that died without closing them (SIGKILL, a crash, power)
   * left running. Called once at start, before any session of ours exists. tmux sessions are never
   * touched: they are meant to outlive ptydeck, and are taken back by adoptDurableSessions.
   */
  async reapOrphans(): Promise<number> {
    return this.nativeRecords ? this.nativeRecords.reapDead(this.tracker) : 0;
  }

  /** tmux for an explicitly created terminal when configured or found; a native PTY otherwise. */
  private chooseBackend(req: CreateRequest): 'native' | 'tmux' {
    if (this.config.backend === 'native') return 'native';
    if (this.config.backend === 'tmux' && !this.backends.tmux) {
      const why = tmuxAvailability().ok ? 'ptydeck has no state directory for it' : tmuxAvailability().why || 'no tmux binary found';
      if (req.explicit) throw new TmuxUnavailableError(`AIO_SHELL_BACKEND=tmux, but ${why}`);
    }
    // A session that runs one command (execd's `command`) has no shell integration to announce its exit
    // status, which tmux does not always record: it stays on a native PTY.
    const eligible = req.explicit === true && req.retention !== 'expiring' && req.command === undefined;
    return eligible && this.backends.tmux ? 'tmux' : 'native';
  }

  /**
   * Takes back the tmux sessions an earlier ptydeck left running (after a quit, or a crash): same ids,
   * owners and settings, their output since then read into the log. A session whose tmux pane is gone
   * is listed as ended, not dropped.
   */
  adoptDurableSessions(): Session[] {
    const tmux = this.backends.tmux;
    if (!tmux || !this.durable) return [];
    const adopted: Session[] = [];
    for (const saved of this.durable.load()) {
      if (this.sessions.has(saved.id)) continue;
      const session = new Session(
        {
          id: saved.id,
          owner: saved.owner,
          origin: saved.origin,
          cwd: saved.cwd,
          cols: saved.cols,
          rows: saved.rows,
          shell: this.config.shell,
          logBytes: this.config.logBytes,
          scrollbackLines: this.config.scrollbackLines,
          floor: saved.floor,
          noChangeTimeoutSecs: saved.noChangeTimeoutSecs,
          retention: saved.retention,
          teardownGraceMs: this.config.teardownGraceMs,
          backend: 'tmux',
          identity: { nonce: saved.nonce, envTag: saved.envTag, cgroup: saved.cgroup ?? null },
          createdAt: saved.createdAt,
          restored: true,
        },
        this.backends,
        this.tracker,
      );
      this.register(session);
      session.adopt(tmux.adopt(saved.id));
      adopted.push(session);
      this.events.emit('created', session);
    }
    return adopted;
  }

  /**
   * ptydeck is quitting: native sessions end with their process trees; tmux sessions are left running
   * (and recorded) for the next start to adopt.
   */
  async shutdown(): Promise<void> {
    this.durable?.save(this.list(), true);
    await Promise.all(
      this.list().map(async (s) => {
        if (s.isTmux) {
          this.sessions.delete(s.id);
          s.detach();
        } else await this.close(s.id);
      }),
    );
  }

  /** Closes a session for `by`; the floor may refuse an agent (FloorRefusedError), and then nothing changes. */
  async close(id: string, by: Actor = SYSTEM): Promise<TeardownReport | null> {
    const s = this.sessions.get(id);
    if (!s) return null;
    s.authorize(by, 'close');
    this.sessions.delete(id);
    return s.close(by);
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.list().map((s) => this.close(s.id)));
  }

  /** On process exit: no promises, every native session dies now (tmux sessions are meant to survive). */
  killAllSync(): void {
    this.durable?.save(this.list(), true);
    for (const s of this.sessions.values()) {
      try {
        s.killNow();
      } catch {
        // keep going: every other session must still die
      }
    }
    this.sessions.clear();
  }

  dispose(): void {
    clearInterval(this.reaper);
    clearInterval(this.waitMonitor);
    this.durable?.dispose();
  }

  /**
   * Keeps each session's `waitingForInput` current for the viewer: a running program (not the shell at
   * its prompt) blocked reading the terminal, once its output has settled. Any wait counts here, old or
   * new; the stricter rule for sends lives in send.ts.
   */
  private checkWaiting(): void {
    for (const s of this.sessions.values()) {
      if (!s.isAlive || s.mode !== 'pty' || s.shellState !== 'busy' || !kernelProbeAvailable) {
        this.waitSeenAt.delete(s);
        s.setWaitingForInput(false);
        continue;
      }
      if (Date.now() - s.lastOutputAt < WaitMonitorConstants.SettleMs) continue;
      if (!anyTerminalWait(probeForeground(s.pid!))) {
        this.waitSeenAt.delete(s);
        s.setWaitingForInput(false);
        continue;
      }
      // Seen twice with no output between: a command that just ended leaves the shell reading at its
      // prompt a moment before its end marker is read, and that is not a program waiting for input.
      if (this.waitSeenAt.get(s) === s.log.end) s.setWaitingForInput(true);
      else this.waitSeenAt.set(s, s.log.end);
    }
  }

  /** A session may be closed to make room when nothing depends on it right now. */
  isReclaimable(s: Session): boolean {
    if (s.closed || !s.isAlive) return true;
    // A session the person holds is in use, whatever it runs.
    if (s.floor.mode === 'takeover') return false;
    const running = s.commands.current !== null && !s.commands.current.shellDone;
    return !running && s.shellState !== 'busy' && s.attachedClients === 0;
  }

  /** How many sessions are kept for the person's own: agents together may hold no more than the rest. */
  get personReserve(): number {
    return Math.min(SessionConstants.PersonReserveSessions, Math.floor(this.config.maxSessions / 4));
  }

  /** The most sessions `owner` may hold: the person, the global limit; an agent, its quota within the agents' share. */
  limitFor(owner: string): number {
    if (owner === this.config.personOwner) return this.config.maxSessions;
    return Math.min(this.config.maxSessionsPerAgent, this.config.maxSessions - this.personReserve);
  }

  /**
   * Makes room for one more session of `owner`, reclaiming only that owner's own idle sessions (least
   * recently used first): one agent's creations never close another principal's session.
   */
  private async makeRoom(id: string, owner: string): Promise<void> {
    for (;;) {
      const problem = this.roomProblem(id, owner);
      if (!problem) return;
      const victim = this.list()
        .filter((s) => s.owner === owner && this.isReclaimable(s))
        .sort((a, b) => rank(a) - rank(b) || a.lastUsedAt.getTime() - b.lastUsedAt.getTime())[0];
      if (!victim) throw new SessionLimitError(problem);
      await this.close(victim.id);
    }
  }

  /** Why `owner` has no room for another session now (null when it has). Says nothing of other principals' sessions. */
  private roomProblem(id: string, owner: string): string | null {
    const pending = [...this.creatingOwner.entries()].filter(([other]) => other !== id).map(([, o]) => o);
    const total = this.sessions.size + pending.length;
    const reclaim = 'none of yours can be reclaimed (each has a running command or an attached client); close one first';
    if (owner === this.config.personOwner) {
      return total >= this.config.maxSessions ? `Cannot create session: the limit of ${this.config.maxSessions} sessions is reached and none can be reclaimed: ${reclaim}` : null;
    }
    const own = this.list().filter((s) => s.owner === owner).length + pending.filter((o) => o === owner).length;
    if (own >= this.config.maxSessionsPerAgent) {
      return `Cannot create session: ${owner} holds ${own} sessions, its quota of ${this.config.maxSessionsPerAgent} sessions, and ${reclaim}`;
    }
    const agents = this.list().filter((s) => s.owner !== this.config.personOwner).length + pending.filter((o) => o !== this.config.personOwner).length;
    if (agents >= this.config.maxSessions - this.personReserve || total >= this.config.maxSessions) {
      return `Cannot create session: there is no room for another agent session right now (the rest is kept for the person), and ${reclaim}, or try again later`;
    }
    return null;
  }

  private async reapIdle(): Promise<void> {
    const limit = this.config.idleTimeoutSecs * 1000;
    const now = Date.now();
    for (const s of this.list()) {
      const lastActivity = Math.max(s.lastUsedAt.getTime(), s.lastOutputAt);
      if (now - lastActivity > limit && this.isReclaimable(s)) await this.close(s.id);
    }
  }
}

/** Ended sessions go first, then expiring ones, then the rest by age of use. */
function rank(s: Session): number {
  if (!s.isAlive && s.started) return 0;
  return s.spec.retention === 'expiring' ? 1 : 2;
}
