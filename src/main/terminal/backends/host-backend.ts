import { constants as osConstants } from 'node:os';
import { HostConstants, OutputLogConstants } from '../constants';
import { isSavedSession, type SavedSession } from '../durable-state';
import { HostClient, HostUnavailableError, type HandleListener } from '../host/host-client';
import { readStat } from '../processes';
import type { AdoptableProcess, DurableBackend, ProcessExit, SpawnSpec } from './backend';

/**
 * Terminals in the PTY host (terminal/host/): a separate ptydeck process that owns the PTYs and their
 * logs and outlives the server. Each session's TerminalProcess here is a proxy to a host session, so
 * the session core above it is the same as with an in-process node-pty.
 *
 * The connection is made (and the host started, if none runs for this home) before the first spawn;
 * spawn itself stays synchronous: frames on one connection are handled in order, so input written
 * right after a spawn reaches the terminal it was meant for. The pid arrives a moment later.
 */
export class HostBackend implements DurableBackend {
  readonly kind = 'host' as const;
  private client: HostClient | null = null;
  private connecting: Promise<HostClient> | null = null;
  /** The handle each open session has on the current connection. */
  private readonly handles = new Map<string, number>();
  /** The last record sent per session, so only changes are sent again. */
  private readonly sentRecords = new Map<string, string>();

  constructor(
    private readonly home: string,
    /** Sent with every spawn: the host holds its copy of the logs to the server's budget. */
    private readonly memoryBudgetBytes?: number,
  ) {}

  /** Connects to the home's host, starting one if none runs. */
  async connect(): Promise<void> {
    if (this.client?.isOpen) return;
    this.connecting ??= HostClient.connect(this.home, { start: true })
      .then((c) => this.use(c!))
      .finally(() => (this.connecting = null));
    await this.connecting;
  }

  get hostPid(): number | null {
    return this.client?.isOpen ? this.client.hostPid : null;
  }

  private use(client: HostClient): HostClient {
    this.client = client;
    client.onClose(() => {
      if (this.client === client) this.client = null;
      this.handles.clear();
      this.sentRecords.clear();
    });
    return client;
  }

  spawn(spec: SpawnSpec): HostProcess {
    const client = this.client;
    if (!client?.isOpen) throw new HostUnavailableError('the PTY host is not connected');
    const proc = new HostProcess(client, spec.sessionId ?? '', 0, false);
    this.handles.set(proc.sessionId, proc.handle);
    if (spec.record) this.sentRecords.set(proc.sessionId, JSON.stringify(spec.record));
    client.spawn(proc.handle, {
      id: proc.sessionId,
      file: spec.file,
      args: spec.args,
      cwd: spec.cwd,
      env: spec.env,
      cols: spec.cols,
      rows: spec.rows,
      logBytes: spec.logBytes ?? OutputLogConstants.DefaultCapacityBytes,
      ...(this.memoryBudgetBytes !== undefined ? { memoryBudgetBytes: this.memoryBudgetBytes } : {}),
      record: spec.record ?? null,
    });
    return proc;
  }

  /** The sessions the host kept (a previous server's), without starting a host when none runs. */
  async survivors(): Promise<{ saved: SavedSession; proc: AdoptableProcess }[]> {
    if (!this.client?.isOpen) {
      const client = await HostClient.connect(this.home, { start: false }).catch(() => null);
      if (!client) return [];
      this.use(client);
    }
    const client = this.client!;
    const out: { saved: SavedSession; proc: AdoptableProcess }[] = [];
    for (const info of client.sessions) {
      if (!isSavedSession(info.record)) continue;
      const proc = new HostProcess(client, info.id, info.logStart, true, info.pid, info.logEnd);
      this.handles.set(info.id, proc.handle);
      this.sentRecords.set(info.id, JSON.stringify(info.record));
      out.push({ saved: info.record, proc });
    }
    return out;
  }

  save(sessions: SavedSession[]): void {
    const client = this.client;
    if (!client?.isOpen) return;
    for (const saved of sessions) {
      const handle = this.handles.get(saved.id);
      const json = JSON.stringify(saved);
      if (handle === undefined || this.sentRecords.get(saved.id) === json) continue;
      this.sentRecords.set(saved.id, json);
      client.record(handle, saved);
    }
  }

  destroy(sessionId: string): void {
    const handle = this.handles.get(sessionId);
    this.handles.delete(sessionId);
    this.sentRecords.delete(sessionId);
    if (handle !== undefined) this.client?.release(handle);
  }

  /** Lets go of the host (its sessions run on). */
  dispose(): void {
    this.client?.close();
    this.client = null;
  }

  /**
   * Ends the host itself, with every session it still holds, and waits until it has exited (tests, and
   * whoever wants nothing left running). Sessions should be closed first: this is the last resort.
   */
  async shutdownHost(timeoutMs: number = HostConstants.ShutdownWaitMs): Promise<void> {
    const client = this.client ?? (await HostClient.connect(this.home, { start: false }).catch(() => null));
    if (!client?.isOpen) return;
    const pid = client.hostPid;
    const gone = new Promise<void>((resolve) => client.onClose(resolve));
    client.shutdownHost();
    await Promise.race([gone, new Promise((r) => setTimeout(r, timeoutMs))]);
    const deadline = Date.now() + timeoutMs;
    while (isAliveByPid(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (isAliveByPid(pid)) process.kill(pid, 'SIGKILL');
    this.client = null;
  }
}

function isAliveByPid(pid: number): boolean {
  const st = readStat(pid);
  // A zombie (the host was our child and is not reaped yet) has exited.
  return st !== null && st.state !== 'Z' && st.state !== 'X';
}

/** One host session, as the server's session sees it: a terminal process like any other. */
export class HostProcess implements AdoptableProcess, HandleListener {
  readonly isTty = true;
  readonly handle: number;
  readonly started: Promise<void>;
  readonly replayed: Promise<void>;
  pid: number;
  /** Why the host could not start the program, when it could not. */
  spawnError: string | null = null;
  private markStarted!: () => void;
  private markReplayed!: () => void;
  private readonly dataListeners: ((data: Buffer, channel: number, offset: number) => void)[] = [];
  private readonly exitListeners: ((exit: ProcessExit) => void)[] = [];
  private ended: ProcessExit | null = null;
  /** The offset the next byte should have; a frame's offset says where its bytes really sit. */
  private next: number;
  private detached = false;
  /** Input sent to the host, and what it last said it had received and had waiting (INPUTSTATE). */
  private inputSent = 0;
  private inputTaken = 0;
  private inputWaiting = 0;
  /** What the host was last told to keep (Infinity: nothing), the newest mark, and its timer if not sent. */
  private keptFrom = Infinity;
  private keepNext = Infinity;
  private keepLater: NodeJS.Timeout | null = null;

  constructor(
    private readonly client: HostClient,
    readonly sessionId: string,
    readonly initialOffset: number,
    private readonly adopted: boolean,
    pid = 0,
    /** For an adopted session: the end of the host's log when we connected (replayed once we reach it). */
    private readonly replayTo = 0,
  ) {
    this.pid = pid;
    this.next = initialOffset;
    this.started = new Promise((resolve) => (this.markStarted = resolve));
    this.replayed = new Promise((resolve) => (this.markReplayed = resolve));
    if (adopted) this.markStarted();
    if (this.next >= replayTo) this.markReplayed();
    // An adopted session whose shell already ended hears so from the host once its output is delivered.
    this.handle = client.open(this);
  }

  begin(): void {
    if (this.adopted) this.client.attach(this.handle, this.sessionId, this.initialOffset);
  }

  detach(): void {
    this.detached = true;
    this.client.forget(this.handle);
  }

  spawned(pid: number, _startTime: number | null, error: string | null): void {
    this.pid = pid;
    this.spawnError = error;
    this.markStarted();
    // Nothing was started, so nothing will ever exit: say so now (node-pty would have thrown at once).
    if (error) this.exit({ exitCode: null, signal: null });
  }

  output(offset: number, bytes: Buffer): void {
    if (this.detached) return;
    let data = bytes;
    let at = offset;
    if (at < this.next) {
      // Bytes we already have (never expected, but never to be doubled either).
      const skip = Math.min(data.length, this.next - at);
      data = data.subarray(skip);
      at += skip;
      if (!data.length) return;
    }
    this.next = at + data.length;
    for (const l of this.dataListeners) l(data, 1, at);
    if (this.next >= this.replayTo) this.markReplayed();
  }

  exit(e: ProcessExit): void {
    if (this.ended || this.detached) return;
    this.ended = e;
    // Both must settle even when the host never got to start the program, or lost it.
    this.markStarted();
    this.markReplayed();
    for (const l of this.exitListeners.splice(0)) l(e);
  }

  drain(): Promise<void> {
    return this.ended || this.detached ? Promise.resolve() : this.client.sync(this.handle);
  }

  throttle(on: boolean): void {
    if (!this.ended && !this.detached) this.client.flow(this.handle, on);
  }

  keepFrom(offset: number): void {
    this.keepNext = offset;
    // A mark that moved back (a client resuming from further back) or far goes at once, small moves a
    // moment later: the host only needs it near its capacity.
    if (offset < this.keptFrom || offset - this.keptFrom >= HostConstants.KeepStepBytes) this.sendKeep();
    else if (offset !== this.keptFrom && !this.keepLater) {
      this.keepLater = setTimeout(() => this.sendKeep(), HostConstants.KeepTrailMs);
      this.keepLater.unref();
    }
  }

  private sendKeep(): void {
    if (this.keepLater) clearTimeout(this.keepLater);
    this.keepLater = null;
    if (this.ended || this.detached || this.keepNext === this.keptFrom) return;
    this.keptFrom = this.keepNext;
    this.client.keep(this.handle, this.keptFrom);
  }

  write(data: string | Uint8Array): void {
    if (this.ended || this.detached) return;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.inputSent += bytes.length;
    this.client.input(this.handle, bytes);
  }

  /** Input on its way to the host and waiting there for the program (absent from a host that cannot say). */
  get pendingInputBytes(): number | undefined {
    return this.client.reportsInput ? Math.max(0, this.inputSent - this.inputTaken) + this.inputWaiting : undefined;
  }

  inputState(taken: number, waiting: number): void {
    this.inputTaken = taken;
    this.inputWaiting = waiting;
  }

  resize(cols: number, rows: number): void {
    if (this.ended || this.detached) return;
    this.client.resize(this.handle, cols, rows);
  }

  kill(signal: NodeJS.Signals = 'SIGHUP'): void {
    if (this.ended || this.detached) return;
    const n = osConstants.signals[signal];
    if (n) this.client.kill(this.handle, n);
  }

  onData(listener: (data: Buffer, channel: number, offset: number) => void): void {
    this.dataListeners.push(listener);
  }

  onExit(listener: (exit: ProcessExit) => void): void {
    if (this.ended) listener(this.ended);
    else this.exitListeners.push(listener);
  }
}
