import { randomUUID } from 'node:crypto';
import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { Backend } from './backends/backend';
import { NodePtyBackend } from './backends/node-pty-backend';
import { PipeBackend } from './backends/pipe-backend';
import { OutputLogConstants, SessionConstants, TeardownConstants, CommandConstants, ScreenConstants, WaitMonitorConstants } from './constants';
import { Emitter } from './emitter';
import { anyTerminalWait, kernelProbeAvailable, probeForeground } from './readiness';
import type { FloorMode } from './floor';
import { Session, type SessionSpec } from './session';
import type { TeardownReport } from './teardown';

export interface ManagerConfig {
  maxSessions: number;
  idleTimeoutSecs: number;
  logBytes: number;
  scrollbackLines: number;
  noChangeTimeoutSecs: number;
  teardownGraceMs: number;
  defaultCwd: string;
  shell?: string;
}

export const defaultManagerConfig = (): ManagerConfig => ({
  maxSessions: SessionConstants.DefaultMaxSessions,
  idleTimeoutSecs: SessionConstants.DefaultIdleTimeoutSecs,
  logBytes: OutputLogConstants.DefaultCapacityBytes,
  scrollbackLines: ScreenConstants.DefaultScrollbackLines,
  noChangeTimeoutSecs: CommandConstants.DefaultNoChangeTimeoutSecs,
  teardownGraceMs: TeardownConstants.GraceMs,
  defaultCwd: homedir(),
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
}

/** A request the core refuses; doors turn it into their dialect's 400. */
export class InvalidRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidRequestError';
  }
}

export class SessionLimitError extends Error {
  constructor(max: number) {
    super(
      `Cannot create session: the limit of ${max} sessions is reached and none can be reclaimed (each has a running command or an attached client); close one first`,
    );
    this.name = 'SessionLimitError';
  }
}

/** The id exists and belongs to someone else. */
export class IdTakenError extends Error {
  constructor(id: string) {
    super(`Session id ${id} is already in use by another principal`);
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
 * Owns every session: creates them (idempotently by id), enforces the session limit by reclaiming the
 * least recently used idle session, closes idle ones, and ends them all on shutdown.
 */
export class SessionManager {
  readonly events = new Emitter<ManagerEvents>();
  readonly config: ManagerConfig;
  private readonly sessions = new Map<string, Session>();
  private readonly creating = new Map<string, Promise<{ session: Session; created: boolean }>>();
  private readonly backends: { pty: Backend; pipe: Backend };
  private readonly reaper: NodeJS.Timeout;
  private readonly waitMonitor: NodeJS.Timeout;

  constructor(config: Partial<ManagerConfig> = {}, backends?: { pty: Backend; pipe?: Backend }) {
    this.config = { ...defaultManagerConfig(), ...config };
    this.backends = { pty: backends?.pty ?? new NodePtyBackend(), pipe: backends?.pipe ?? new PipeBackend() };
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
    try {
      return await pending;
    } finally {
      this.creating.delete(id);
    }
  }

  private async createNew(id: string, req: CreateRequest): Promise<{ session: Session; created: boolean }> {
    const cwd = resolveDirectory(req.cwd ?? this.config.defaultCwd);
    const cols = req.cols ?? SessionConstants.DefaultCols;
    const rows = req.rows ?? SessionConstants.DefaultRows;
    if (!Number.isInteger(cols) || cols < 1 || cols > SessionConstants.MaxCols) throw new InvalidRequestError(`cols must be an integer from 1 to ${SessionConstants.MaxCols}`);
    if (!Number.isInteger(rows) || rows < 1 || rows > SessionConstants.MaxRows) throw new InvalidRequestError(`rows must be an integer from 1 to ${SessionConstants.MaxRows}`);
    await this.makeRoom();
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
    };
    const session = new Session(spec, this.backends);
    this.sessions.set(id, session);
    session.events.on('changed', (s) => this.events.emit('changed', s));
    session.events.on('closed', (report) => {
      if (this.sessions.get(id) === session) this.sessions.delete(id);
      this.events.emit('closed', { session, report });
    });
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

  async close(id: string): Promise<TeardownReport | null> {
    const s = this.sessions.get(id);
    if (!s) return null;
    this.sessions.delete(id);
    return s.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.list().map((s) => this.close(s.id)));
  }

  /** On process exit: no promises, everything dies now. */
  killAllSync(): void {
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
  }

  /**
   * Keeps each session's `waitingForInput` current for the viewer: a running program (not the shell at
   * its prompt) blocked reading the terminal, once its output has settled. Any wait counts here, old or
   * new; the stricter rule for sends lives in send.ts.
   */
  private checkWaiting(): void {
    for (const s of this.sessions.values()) {
      if (!s.isAlive || s.mode !== 'pty' || s.shellState !== 'busy' || !kernelProbeAvailable) {
        s.setWaitingForInput(false);
        continue;
      }
      if (Date.now() - s.lastOutputAt < WaitMonitorConstants.SettleMs) continue;
      s.setWaitingForInput(anyTerminalWait(probeForeground(s.pid!)));
    }
  }

  /** A session may be closed to make room when nothing depends on it right now. */
  isReclaimable(s: Session): boolean {
    if (s.closed || !s.isAlive) return true;
    const running = s.commands.current !== null && !s.commands.current.shellDone;
    return !running && s.shellState !== 'busy' && s.attachedClients === 0;
  }

  stats(): { total: number; active: number; idle: number; max: number; timeoutSecs: number } {
    const now = Date.now();
    let active = 0;
    for (const s of this.sessions.values()) {
      const busy = !this.isReclaimable(s);
      if (busy || now - s.lastUsedAt.getTime() < 300_000) active++;
    }
    return { total: this.sessions.size, active, idle: this.sessions.size - active, max: this.config.maxSessions, timeoutSecs: this.config.idleTimeoutSecs };
  }

  private async makeRoom(): Promise<void> {
    const pendingCount = this.creating.size - 1;
    while (this.sessions.size + Math.max(0, pendingCount) >= this.config.maxSessions) {
      const victim = this.list()
        .filter((s) => this.isReclaimable(s))
        .sort((a, b) => rank(a) - rank(b) || a.lastUsedAt.getTime() - b.lastUsedAt.getTime())[0];
      if (!victim) throw new SessionLimitError(this.config.maxSessions);
      await this.close(victim.id);
    }
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

export function resolveDirectory(dir: string): string {
  const expanded = dir === '~' ? homedir() : dir.startsWith('~/') ? join(homedir(), dir.slice(2)) : dir;
  if (expanded.includes('\0')) throw new InvalidRequestError('cwd must not contain NUL bytes');
  if (!isAbsolute(expanded)) throw new InvalidRequestError(`cwd must be an absolute path (got ${JSON.stringify(dir)})`);
  let st;
  try {
    st = statSync(expanded);
  } catch {
    throw new InvalidRequestError(`cwd ${JSON.stringify(dir)} does not exist`);
  }
  if (!st.isDirectory()) throw new InvalidRequestError(`cwd ${JSON.stringify(dir)} is not a directory`);
  return realpathSync(expanded);
}
