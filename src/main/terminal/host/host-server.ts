import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import type { ProcessExit } from '../backends/backend';
import { NodePtyBackend } from '../backends/node-pty-backend';
import { HostConstants, MemoryConstants } from '../constants';
import { MemoryBudget } from '../memory-budget';
import { readStat } from '../processes';
import { removeShellRcDir, shellRcDirOf } from '../shell-integration';
import { HostedSession, type OutputSink } from './hosted-session';
import { TurnWrites } from './turn-writes';
import {
  challengeFrame,
  writeU64,
  checkAuth,
  FrameDecoder,
  FrameType,
  handleFrame,
  HostProtocol,
  jsonFrame,
  outputHeader,
  ProtocolError,
  readU64,
  type SpawnRequest,
} from './protocol';

/**
 * The PTY host's listener: every connection must prove it can read the secret file (which only this
 * user can) before anything else; then it may spawn, attach to and drive terminals. Anything that does
 * not speak the protocol is dropped, never thrown at the process: one bad client costs one connection.
 *
 * The host exits once it has had no session and no authenticated client for IdleExitMs.
 */
export interface HostServerOptions {
  secret: Buffer;
  /** Where the host's memory budget spills cold log segments (a private directory). */
  spillDir: string | null;
  /** Called when the host should exit (idle, or told to shut down). */
  onIdle(): void;
  log(message: string): void;
}

const signalNames = new Map<number, NodeJS.Signals>(Object.entries(osConstants.signals).map(([name, n]) => [n as number, name as NodeJS.Signals]));

export class HostServer {
  readonly sessions = new Map<string, HostedSession>();
  private readonly server: Server;
  private readonly connections = new Set<HostConnection>();
  private pending = 0;
  private idleTimer: NodeJS.Timeout | null = null;
  private everConnected = false;
  private readonly backend = new NodePtyBackend();
  /** The host holds logs for servers that come back: the same budget as its server's, spilling what they already have. */
  private readonly memory: MemoryBudget;

  constructor(readonly opts: HostServerOptions) {
    this.memory = new MemoryBudget(
      MemoryConstants.DefaultBudgetBytes,
      () =>
        [...this.sessions.values()].map((s) => ({
          lastActiveAt: s.lastActiveAt,
          logResidentBytes: s.log.residentBytes,
          screenBytes: 0,
          dropScreen: () => 0,
          spillLog: (keep: number, wanted: number, dir: string | null) => s.log.spillCold(keep, wanted, dir),
          spillsLanded: () => s.log.spillsLanded(),
        })),
      opts.spillDir,
      MemoryConstants.HostCollectEveryMs,
    );
    this.server = createServer((socket) => this.accept(socket));
    this.server.on('error', (err) => opts.log(`listener error: ${err.message}`));
    this.checkIdle();
  }

  listen(path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(path, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  close(): void {
    this.memory.dispose();
    this.server.close();
    for (const c of this.connections) c.destroy();
  }

  /** Ends every session (SIGHUP, then SIGKILL) and resolves once they have exited or the time is up. */
  async endAll(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    for (const s of all) s.end();
    const deadline = Date.now() + HostConstants.ReleaseKillMs + 500;
    while (all.some((s) => !s.exit) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  private accept(socket: Socket): void {
    if (this.pending >= HostConstants.MaxPendingConnections) {
      socket.destroy();
      return;
    }
    this.pending++;
    const conn = new HostConnection(this, socket);
    let counted = true;
    const uncount = (): void => {
      if (counted) this.pending--;
      counted = false;
    };
    conn.onAuthenticated = () => {
      uncount();
      this.everConnected = true;
      this.connections.add(conn);
      this.checkIdle();
    };
    socket.once('close', () => {
      uncount();
      this.connections.delete(conn);
      for (const s of this.sessions.values()) s.detach(conn);
      this.checkIdle();
    });
  }

  spawn(req: SpawnRequest): HostedSession {
    const existing = this.sessions.get(req.id);
    if (existing) {
      // A server re-creating an id it had closed without a RELEASE reaching us: the old one goes.
      this.sessions.delete(req.id);
      existing.end();
    }
    if (typeof req.memoryBudgetBytes === 'number' && req.memoryBudgetBytes > 0) this.memory.limitBytes = req.memoryBudgetBytes;
    const proc = this.backend.spawn({ sessionId: req.id, file: req.file, args: req.args, cwd: req.cwd, env: req.env, cols: req.cols, rows: req.rows });
    const session = new HostedSession(req.id, proc, req.logBytes, req.record, readStat(proc.pid)?.startTime ?? null, this.memory);
    // The server that made the shell's rc directory may be gone by the time the shell ends.
    session.whenOver(() => removeShellRcDir(shellRcDirOf(req.env)));
    this.sessions.set(req.id, session);
    this.checkIdle();
    return session;
  }

  release(session: HostedSession): void {
    if (this.sessions.get(session.id) === session) this.sessions.delete(session.id);
    session.end();
    this.checkIdle();
  }

  shutdown(): void {
    void this.endAll().then(() => this.opts.onIdle());
  }

  signal(n: number): NodeJS.Signals | undefined {
    return signalNames.get(n);
  }

  private checkIdle(): void {
    const idle = this.sessions.size === 0 && this.connections.size === 0;
    if (idle && !this.idleTimer) {
      this.idleTimer = setTimeout(() => this.opts.onIdle(), this.everConnected ? HostConstants.IdleExitMs : HostConstants.FirstClientGraceMs);
    } else if (!idle && this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = null;
    }
  }
}

/** One client connection: the handshake, then frames in order. */
class HostConnection implements OutputSink {
  onAuthenticated: () => void = () => undefined;
  private authenticated = false;
  private readonly challenge = randomBytes(HostProtocol.ChallengeBytes);
  private readonly decoder: FrameDecoder;
  private readonly handles = new Map<number, HostedSession>();
  private readonly handshakeTimer: NodeJS.Timeout;
  /** Input bytes received per handle, and the waiting bytes last reported (INPUTSTATE). */
  private readonly inputTaken = new Map<number, number>();
  private readonly inputWaiting = new Map<number, number>();
  /** Handles with input since the last report: reported together once this turn's frames are handled. */
  private readonly inputNews = new Set<number>();
  private readonly inputReported = new Map<number, number>();
  private inputReportSoon: NodeJS.Immediate | null = null;
  private inputReportLater: NodeJS.Timeout | null = null;
  private readonly writes: TurnWrites;

  constructor(
    private readonly host: HostServer,
    private readonly socket: Socket,
  ) {
    // Before the handshake, only a tiny AUTH frame is acceptable: a client may not make us buffer more.
    this.decoder = new FrameDecoder({ frame: (type, body) => this.onFrame(type, body) }, HostProtocol.MaxFrameBytes);
    this.writes = new TurnWrites(socket);
    this.handshakeTimer = setTimeout(() => this.refuse('no handshake in time'), HostConstants.HandshakeTimeoutMs);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(this.handshakeTimer);
      if (this.inputReportSoon) clearImmediate(this.inputReportSoon);
      if (this.inputReportLater) clearTimeout(this.inputReportLater);
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        if (!this.authenticated && chunk.length > 64) throw new ProtocolError('oversized handshake');
        this.decoder.push(chunk);
      } catch (err) {
        this.refuse((err as Error).message);
      }
    });
    socket.write(challengeFrame(this.challenge));
  }

  destroy(): void {
    this.writes.flush();
    this.socket.destroy();
  }

  private refuse(why: string): void {
    if (this.socket.destroyed) return;
    this.host.opts.log(`dropped a connection: ${why}`);
    // What this turn answered before the bad frame still goes out (a SPAWNED, say), as it did unbatched.
    this.writes.flush();
    this.socket.destroy();
  }

  output(handle: number, offset: number, payload: Buffer, flushed: () => void): void {
    this.writes.write(outputHeader(handle, offset, payload.length));
    this.writes.write(payload, flushed);
  }

  exit(handle: number, exit: ProcessExit): void {
    const body = Buffer.allocUnsafe(8);
    body.writeInt32LE(exit.exitCode ?? -1, 0);
    body.writeInt32LE(exit.signal ?? 0, 4);
    this.send(handleFrame(FrameType.Exit, handle, body));
  }

  synced(handle: number, token: number): void {
    const body = Buffer.allocUnsafe(4);
    body.writeUInt32LE(token, 0);
    this.send(handleFrame(FrameType.Synced, handle, body));
  }

  private send(buf: Buffer): void {
    this.writes.write(buf);
  }

  private tookInput(handle: number, bytes: number): void {
    this.inputTaken.set(handle, (this.inputTaken.get(handle) ?? 0) + bytes);
    this.inputChanged(handle);
  }

  private inputChanged(handle: number): void {
    this.inputNews.add(handle);
    this.inputReportSoon ??= setImmediate(() => this.reportInput());
  }

  /**
   * INPUTSTATE for each handle that had input since the last report, and for each whose waiting input
   * changed; then again later while any input still waits (a program reading it slowly drains it).
   */
  private reportInput(): void {
    this.inputReportSoon = null;
    if (this.inputReportLater) clearTimeout(this.inputReportLater);
    this.inputReportLater = null;
    if (this.socket.destroyed) return;
    const handles = new Set([...this.inputNews, ...this.inputWaiting.keys()]);
    this.inputNews.clear();
    for (const handle of handles) {
      const session = this.handles.get(handle);
      const waiting = session && !session.exit ? (session.proc.pendingInputBytes ?? 0) : 0;
      const before = this.inputWaiting.get(handle);
      if (waiting > 0) this.inputWaiting.set(handle, waiting);
      else this.inputWaiting.delete(handle);
      if (before === waiting && !this.inputTakenChanged(handle)) continue;
      const body = Buffer.allocUnsafe(12);
      writeU64(body, this.inputTaken.get(handle) ?? 0, 0);
      body.writeUInt32LE(Math.min(waiting, 0xffffffff), 8);
      this.send(handleFrame(FrameType.InputState, handle, body));
    }
    if (this.inputWaiting.size) this.inputReportLater = setTimeout(() => this.reportInput(), HostConstants.InputStateEveryMs);
  }

  /** Input arrived on the handle since its last report (which reported `taken` as it was then). */
  private inputTakenChanged(handle: number): boolean {
    const taken = this.inputTaken.get(handle) ?? 0;
    const reported = this.inputReported.get(handle);
    if (reported === taken) return false;
    this.inputReported.set(handle, taken);
    return true;
  }

  private onFrame(type: FrameType, body: Buffer): void {
    if (!this.authenticated) {
      if (type !== FrameType.Auth || !checkAuth(body, this.host.opts.secret, this.challenge)) throw new ProtocolError('failed handshake');
      this.authenticated = true;
      clearTimeout(this.handshakeTimer);
      this.onAuthenticated();
      this.send(jsonFrame(FrameType.Welcome, null, { pid: process.pid, inputState: true, keep: true, sessions: [...this.host.sessions.values()].map((s) => s.info()) }));
      return;
    }
    if (type === FrameType.Shutdown) {
      this.host.shutdown();
      return;
    }
    if (body.length < 4) throw new ProtocolError(`frame ${type} without a handle`);
    const handle = body.readUInt32LE(0);
    const rest = body.subarray(4);
    switch (type) {
      case FrameType.Spawn:
        return this.spawn(handle, parseJson(rest) as SpawnRequest);
      case FrameType.Attach: {
        if (rest.length < 9) throw new ProtocolError('short attach');
        const session = this.host.sessions.get(rest.subarray(8).toString('utf8'));
        if (!session) {
          this.exit(handle, { exitCode: null, signal: null });
          return;
        }
        this.handles.set(handle, session);
        session.attach(this, handle, readU64(rest, 0));
        return;
      }
    }
    const session = this.handles.get(handle);
    if (type === FrameType.Sync && !session) {
      // Nothing to wait for, but the client waits for an answer.
      if (rest.length === 4) this.synced(handle, rest.readUInt32LE(0));
      return;
    }
    if (!session) return; // released meanwhile, or never ours: nothing to do
    switch (type) {
      case FrameType.Input:
        // The server refuses input past InputConstants.MaxPendingBytes from what INPUTSTATE tells it; a
        // server that does not (an earlier version) must still not grow the host without bound.
        if (!session.exit && (session.proc.pendingInputBytes ?? 0) <= HostConstants.DropInputAboveBytes) session.proc.write(rest);
        this.tookInput(handle, rest.length);
        // The server's `send` counts a wait only once its input is in the terminal: say so as soon as it is.
        session.proc.whenInputTaken?.(() => {
          // Reported as waiting (the report came before the write finished): report it taken now.
          if (this.inputWaiting.has(handle)) this.inputChanged(handle);
        });
        return;
      case FrameType.Resize:
        if (rest.length !== 4) throw new ProtocolError('bad resize');
        session.proc.resize(Math.max(1, rest.readUInt16LE(0)), Math.max(1, rest.readUInt16LE(2)));
        return;
      case FrameType.Kill: {
        const sig = rest.length === 1 ? this.host.signal(rest[0]) : undefined;
        if (!sig) throw new ProtocolError('bad signal');
        session.proc.kill(sig);
        return;
      }
      case FrameType.Sync:
        if (rest.length !== 4) throw new ProtocolError('bad sync');
        session.sync(this, rest.readUInt32LE(0));
        return;
      case FrameType.Flow:
        if (rest.length !== 1) throw new ProtocolError('bad flow');
        session.hold(rest[0] === 1);
        return;
      case FrameType.Keep:
        if (rest.length !== 8) throw new ProtocolError('bad keep');
        session.keep(this, readU64(rest, 0));
        return;
      case FrameType.Record:
        session.record = parseJson(rest);
        return;
      case FrameType.Release:
        this.handles.delete(handle);
        this.inputTaken.delete(handle);
        this.inputWaiting.delete(handle);
        this.inputReported.delete(handle);
        this.inputNews.delete(handle);
        this.host.release(session);
        return;
      default:
        throw new ProtocolError(`unknown frame type ${type}`);
    }
  }

  private spawn(handle: number, req: SpawnRequest): void {
    if (!req || typeof req.id !== 'string' || typeof req.file !== 'string' || !Array.isArray(req.args) || typeof req.env !== 'object' || !(req.logBytes > 0)) {
      throw new ProtocolError('malformed spawn request');
    }
    let session: HostedSession;
    try {
      session = this.host.spawn(req);
    } catch (err) {
      const msg = Buffer.from(`could not start ${req.file}: ${(err as Error).message}`, 'utf8');
      const body = Buffer.allocUnsafe(4 + msg.length);
      body.writeUInt32LE(0, 0);
      msg.copy(body, 4);
      this.send(handleFrame(FrameType.Spawned, handle, body));
      return;
    }
    const body = Buffer.allocUnsafe(12);
    body.writeUInt32LE(session.pid, 0);
    body.writeDoubleLE(session.startTime ?? -1, 4);
    this.send(handleFrame(FrameType.Spawned, handle, body));
    this.handles.set(handle, session);
    session.attach(this, handle, 0);
  }
}

function parseJson(buf: Buffer): unknown {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    throw new ProtocolError('malformed JSON');
  }
}
