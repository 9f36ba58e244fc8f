import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AdoptableProcess, Backend, DurableBackend } from './backends/backend';
import { HostBackend } from './backends/host-backend';
import { NodePtyBackend } from './backends/node-pty-backend';
import { PipeBackend } from './backends/pipe-backend';
import { SegmentBytes } from './backends/segment-tailer';
import { TmuxServer, TmuxUnavailableError, tmuxAvailability } from './backends/tmux';
import { TmuxBackend } from './backends/tmux-backend';
import { DurableState, type SavedSession } from './durable-state';
import { HostUnavailableError } from './host/host-client';
import { hostEntryPath } from './host/launch';
import { OutputLogConstants, SessionConstants, TeardownConstants, CommandConstants, ScreenConstants, WaitMonitorConstants, MemoryConstants } from './constants';
import { MemoryBudget, spillDirIn } from './memory-budget';
import { Emitter } from './emitter';
import { InvalidRequestError } from './errors';
import { NativeSessionRecords } from './orphans';
import { existingDirectory } from './paths';
import { detectProcessTracker, environmentTracker, type ProcessTracker } from './process-tracking';
import { WaitMonitor } from './wait-monitor';
import { SYSTEM, type Actor } from './actor';
import type { FloorMode } from './floor';
import { Session, type HostFactory, type SessionBackends, type SessionSpec } from './session';
import type { LineGate } from './line-gate';
import type { GateHost } from './line-gate-link';
import { LineGateServer } from './line-gate-server';
import type { TeardownReport } from './teardown';
import { cleanWindowTitle } from './title';

export interface ManagerConfig {
  /** AIO_SHELL_MAX_SESSIONS: every session, whoever owns it. */
  maxSessions: number;
  /** PTYDECK_MAX_SESSIONS_PER_AGENT: what one agent may hold, so that it cannot starve the others. */
  maxSessionsPerAgent: number;
  /** The owner name of the person's own sessions: they count against the global limit only, and have room kept for them. */
  personOwner: string;
  idleTimeoutSecs: number;
  logBytes: number;
  /** All sessions' logs and screens together (see memory-budget.ts). */
  memoryBudgetBytes: number;
  scrollbackLines: number;
  noChangeTimeoutSecs: number;
  teardownGraceMs: number;
  defaultCwd: string;
  shell?: string;
  /**
   * AIO_SHELL_BACKEND, for explicitly created sessions: `auto` and `host` use the PTY host (terminals
   * that outlive ptydeck, read on another core), `tmux` a tmux session, `native` node-pty in this process.
   */
  backend: 'auto' | 'host' | 'tmux' | 'native';
  /** Where durable state lives (the PTY host's socket, ptydeck's tmux server); null turns both off. */
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
  memoryBudgetBytes: MemoryConstants.DefaultBudgetBytes,
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
  /** Run on this process host instead of a shell (the bash API's one process per command). */
  host?: HostFactory;
  floor?: FloorMode;
  noChangeTimeoutSecs?: number | null;
  retention?: 'persistent' | 'expiring';
  loadUserRc?: boolean;
  /** What to call it (validated by the door: api/validate.ts `title`). */
  title?: string | null;
  /**
   * Created on purpose (AIO's create routes, /pty, /api, MCP) rather than on the side (an exec without
   * an id, an anonymous socket): only such a session may outlive ptydeck (host or tmux), as in AIO.
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
  /** A session exists, before its shell starts: a feature that must see all its output subscribes here. */
  registered: Session;
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
  private readonly backends: SessionBackends;
  /** Where each session's processes are kept (process-tracking.ts). */
  readonly tracker: ProcessTracker;
  /** What a crashed predecessor's in-process sessions left, and ours while they run (orphans.ts). */
  private readonly nativeRecords: NativeSessionRecords | null;
  private readonly saveTimers = new Map<'host' | 'tmux', NodeJS.Timeout>();
  private recordsFinal = false;
  readonly memory: MemoryBudget;
  private readonly reaper: NodeJS.Timeout;
  private readonly waitMonitor: NodeJS.Timeout;
  /** Keeps `waitingForInput` and the prompt line current (wait-monitor.ts). */
  private readonly waits = new WaitMonitor();
  private gateHost: GateHost | undefined;

  constructor(config: Partial<ManagerConfig> = {}, backends?: { pty: Backend; pipe?: Backend }) {
    this.config = { ...defaultManagerConfig(), ...config };
    this.backends = { pty: backends?.pty ?? new NodePtyBackend(), pipe: backends?.pipe ?? new PipeBackend(), durable: {} };
    const { backend, stateDir } = this.config;
    this.tracker = this.config.processTracking === 'environment' ? environmentTracker : detectProcessTracker();
    this.nativeRecords = stateDir ? new NativeSessionRecords(stateDir) : null;
    this.memory = new MemoryBudget(this.config.memoryBudgetBytes, () => this.list(), spillDirIn(stateDir));
    if (stateDir && (backend === 'auto' || backend === 'host') && hostEntryPath()) {
      this.backends.durable.host = new HostBackend(stateDir, this.config.memoryBudgetBytes);
    }
    // tmux when asked for; under `auto` too while tmux sessions of an earlier ptydeck are recorded, so they come back.
    const tmuxRecorded = stateDir !== null && existsSync(join(stateDir, 'tmux-sessions.json'));
    if (stateDir && (backend === 'tmux' || (backend === 'auto' && tmuxRecorded)) && tmuxAvailability().ok) {
      // Keep enough segments on disk to refill the whole output log after a restart.
      const keep = Math.ceil(this.config.logBytes / SegmentBytes) + 1;
      this.backends.durable.tmux = new TmuxBackend(new TmuxServer(stateDir), keep, new DurableState(stateDir));
    }
    this.reaper = setInterval(() => void this.reapIdle(), Math.min(SessionConstants.ReaperIntervalMs, this.config.idleTimeoutSecs * 1000));
    this.reaper.unref();
    this.waitMonitor = setInterval(() => this.waits.tick(this.sessions.values()), WaitMonitorConstants.IntervalMs);
    this.waitMonitor.unref();
  }

  /**
   * From now on, lines typed into new sessions of owners `appliesTo` accepts are asked about first
   * (line-gate.ts). Resolves, once the gate's port is listening, to the way to stop it.
   */
  async setLineGate(gate: LineGate, appliesTo: (owner: string) => boolean): Promise<() => Promise<void>> {
    const server = new LineGateServer(this.config.stateDir);
    await server.start();
    const host: GateHost = { gate, server, appliesTo };
    this.gateHost = host;
    return async () => {
      if (this.gateHost === host) this.gateHost = undefined;
      await server.stop();
    };
  }

  /** The loopback port gated shells ask on (0 when no gate is registered). */
  get lineGatePort(): number {
    return this.gateHost?.server.port ?? 0;
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
      // A process host (the bash API's) runs in this process on pipes: never in the PTY host or tmux.
      backend: req.host ? 'native' : this.chooseBackend(req),
      title: req.title,
    };
    if (spec.backend === 'host') spec.backend = await this.connectHost();
    const session = new Session(spec, this.backends, this.memory, this.gateHost, this.tracker);
    this.register(session);
    if (req.host) {
      try {
        session.host(req.host);
      } catch (err) {
        this.sessions.delete(id);
        throw new InvalidRequestError(`could not start the session: ${(err as Error).message}`);
      }
    } else if (!req.lazy) {
      try {
        session.start();
      } catch (err) {
        this.sessions.delete(id);
        throw new InvalidRequestError(`could not start the shell: ${(err as Error).message}`);
      }
      // A person's own rc file may take long (a pyenv rehash waits a minute on a stale lock): like any
      // terminal emulator, their terminal opens while it still runs (commands wait for the prompt
      // themselves); an agent's clean shell must show a prompt before its creation is answered.
      const ready = await session.ready(req.loadUserRc ? CommandConstants.PersonShellGraceMs : undefined);
      if (!ready && !(req.loadUserRc && session.isAlive)) {
        const spawnError = (session.process as { spawnError?: string | null } | null)?.spawnError;
        const why = spawnError ?? (session.exit ? `the shell exited with code ${session.exit.exitCode}` : 'the shell printed no prompt in time');
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
    this.events.emit('registered', session);
    let recorded = false;
    session.events.on('changed', (s) => {
      if (s.isDurable) this.scheduleSave(s.backendKind as 'host' | 'tmux');
      else if (!recorded && s.processIdentity && !s.closed) {
        // An in-process session's processes, recorded while they run: a successor reaps them if we crash.
        recorded = true;
        this.nativeRecords?.add({ sessionId: id, ...s.processIdentity });
      }
      this.events.emit('changed', s);
    });
    session.events.on('closed', (report) => {
      if (this.sessions.get(id) === session) this.sessions.delete(id);
      if (session.isDurable) this.scheduleSave(session.backendKind as 'host' | 'tmux');
      // Kept while something survived: the next start tries again.
      else if (recorded && report.survivors.length === 0) this.nativeRecords?.remove(id);
      this.events.emit('closed', { session, report });
    });
  }

  /**
   * Ends what in-process sessions of a server that died without closing them (SIGKILL, a crash, power)
   * left running. Called once at start, before any session of ours exists. Durable sessions (PTY host,
   * tmux) are never touched: they are meant to outlive ptydeck, and are taken back by adoptDurableSessions.
   */
  async reapOrphans(): Promise<number> {
    return this.nativeRecords ? this.nativeRecords.reapDead(this.tracker) : 0;
  }

  /** Records of a durable backend's sessions go to it at most every DurableSaveMs (they change with every command). */
  private scheduleSave(kind: 'host' | 'tmux'): void {
    // After a shutdown's last save the records stand: a late change (a session let go, a feature
    // still winding down) must not overwrite them with a list that no longer holds the survivors.
    if (this.recordsFinal || this.saveTimers.has(kind)) return;
    const timer = setTimeout(() => {
      this.saveTimers.delete(kind);
      this.saveNow(kind);
    }, DurableSaveMs);
    timer.unref();
    this.saveTimers.set(kind, timer);
  }

  private saveNow(kind: 'host' | 'tmux'): void {
    const records = this.list()
      .filter((s) => s.backendKind === kind)
      .map((s) => s.savedState())
      .filter((r): r is SavedSession => r !== null);
    this.backends.durable[kind]?.save(records, true);
  }

  /**
   * An explicitly created terminal outlives ptydeck: in the PTY host (`auto`, `host`) or tmux (`tmux`).
   * Everything else, and everything under `native`, is a node-pty in this process.
   */
  private chooseBackend(req: CreateRequest): 'native' | 'host' | 'tmux' {
    const eligible = req.explicit === true && req.retention !== 'expiring';
    if (this.config.backend === 'native' || !eligible) return 'native';
    if (this.config.backend === 'tmux') {
      if (!this.backends.durable.tmux) {
        const why = tmuxAvailability().ok ? 'ptydeck has no state directory for it' : tmuxAvailability().why || 'no tmux binary found';
        throw new TmuxUnavailableError(`AIO_SHELL_BACKEND=tmux, but ${why}`);
      }
      // A session that runs one command (execd's `command`) has no shell integration to announce its
      // exit status, which tmux does not always record: it stays on a native PTY.
      return req.command === undefined ? 'tmux' : 'native';
    }
    if (!this.backends.durable.host) {
      if (this.config.backend === 'host') throw new HostUnavailableError('AIO_SHELL_BACKEND=host, but the PTY host is not built or ptydeck has no state directory');
      return 'native';
    }
    return 'host';
  }

  /** Connects to the PTY host (starting it if need be). Under `auto`, a host that cannot start means node-pty here. */
  private async connectHost(): Promise<'host' | 'native'> {
    try {
      await (this.backends.durable.host as HostBackend).connect();
      return 'host';
    } catch (err) {
      if (this.config.backend === 'host') throw err;
      console.warn(`ptydeck: ${(err as Error).message}; this session runs in-process and will not survive a restart`);
      return 'native';
    }
  }

  /** The PTY host's pid, once connected (for tests and diagnostics). */
  get hostPid(): number | null {
    return (this.backends.durable.host as HostBackend | undefined)?.hostPid ?? null;
  }

  /**
   * Takes back the terminals an earlier ptydeck left running (after a quit, or a crash), from the PTY
   * host and from tmux alike: same ids, owners and settings, and their output read into the log at the
   * same offsets, so markers, commands and the screen are rebuilt. A session whose terminal ended
   * meanwhile is listed as ended, not dropped. Resolves once the output each backend held is in.
   */
  async adoptDurableSessions(): Promise<Session[]> {
    const adopted: Session[] = [];
    const replays: Promise<void>[] = [];
    for (const kind of ['host', 'tmux'] as const) {
      const backend: DurableBackend | undefined = this.backends.durable[kind];
      if (!backend) continue;
      for (const { saved, proc } of await backend.survivors()) {
        if (this.sessions.has(saved.id)) continue;
        const session = new Session(this.specFromRecord(saved, kind), this.backends, this.memory, this.gateHost, this.tracker);
        this.register(session);
        session.adopt(proc);
        adopted.push(session);
        replays.push(whenReplayed(proc));
        this.events.emit('created', session);
      }
    }
    await Promise.all(replays);
    return adopted;
  }

  private specFromRecord(saved: SavedSession, kind: 'host' | 'tmux'): SessionSpec {
    return {
      id: saved.id,
      owner: saved.owner,
      origin: saved.origin,
      cwd: saved.cwd,
      cols: saved.cols,
      rows: saved.rows,
      command: saved.command,
      shell: this.config.shell,
      logBytes: this.config.logBytes,
      scrollbackLines: this.config.scrollbackLines,
      floor: saved.floor,
      noChangeTimeoutSecs: saved.noChangeTimeoutSecs,
      retention: saved.retention,
      teardownGraceMs: this.config.teardownGraceMs,
      backend: kind,
      identity: { nonce: saved.nonce, envTag: saved.envTag, gateHook: saved.gateHook === true, cgroup: saved.cgroup ?? null, ...(typeof saved.rcDir === 'string' ? { rcDir: saved.rcDir } : {}) },
      createdAt: saved.createdAt,
      restored: true,
      // The record is ours, but a title from it is cleaned like any other before it is shown.
      title: typeof saved.title === 'string' ? cleanWindowTitle(saved.title) : null,
    };
  }

  /**
   * ptydeck is quitting: in-process sessions end with their process trees; durable ones (PTY host,
   * tmux) are left running, and recorded, for the next start to adopt, unless `keepDurable` is false
   * (the tests, which must leave nothing behind): then they end too, and so do ptydeck's tmux server
   * and PTY host.
   */
  async shutdown(opts: { keepDurable: boolean } = { keepDurable: true }): Promise<void> {
    if (!opts.keepDurable) {
      // The tmux server first: one command ends every pane (their shells get SIGHUP), so the closes that
      // follow only sweep up what ignored it, and run no tmux command each.
      (this.backends.durable.tmux as TmuxBackend | undefined)?.server.kill();
      await this.closeAll();
      await (this.backends.durable.host as HostBackend | undefined)?.shutdownHost();
      return;
    }
    for (const kind of ['host', 'tmux'] as const) this.saveNow(kind);
    // Those records are final: detaching below must not rewrite them without the sessions they keep.
    this.backends.durable.tmux?.dispose();
    this.recordsFinal = true;
    for (const t of this.saveTimers.values()) clearTimeout(t);
    this.saveTimers.clear();
    await Promise.all(
      this.list().map(async (s) => {
        if (s.isDurable) {
          this.sessions.delete(s.id);
          s.detach();
        } else await this.close(s.id);
      }),
    );
  }

  /** What a shutdown keeps and what it ends, for a person to read before it happens. */
  shutdownPlan(): { ending: Session[]; kept: Session[] } {
    const live = this.list().filter((s) => s.isAlive);
    return { ending: live.filter((s) => !s.isDurable), kept: live.filter((s) => s.isDurable) };
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

  /** On process exit: no promises, every in-process session dies now (durable ones are meant to survive). */
  killAllSync(): void {
    for (const kind of ['host', 'tmux'] as const) this.saveNow(kind);
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
    this.memory.dispose();
    for (const t of this.saveTimers.values()) clearTimeout(t);
    this.saveTimers.clear();
    for (const b of Object.values(this.backends.durable)) b?.dispose();
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

/** Durable records change with every command; sending them this often at most is plenty for a restart. */
const DurableSaveMs = 100;

/** Resolves once an adopted terminal has delivered the output its backend held (or after a bound). */
function whenReplayed(proc: AdoptableProcess): Promise<void> {
  if (!proc.replayed) return Promise.resolve();
  return Promise.race([proc.replayed, new Promise<void>((r) => setTimeout(r, AdoptReplayTimeoutMs).unref())]);
}

/** A host that does not replay a session's log within this is not waited for (its output still comes). */
const AdoptReplayTimeoutMs = 15_000;

/** Ended sessions go first, then expiring ones, then the rest by age of use. */
function rank(s: Session): number {
  if (!s.isAlive && s.started) return 0;
  return s.spec.retention === 'expiring' ? 1 : 2;
}
