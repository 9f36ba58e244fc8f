import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { readStat } from '../processes';
import { shellQuote } from '../shell-integration';
import type { DurableState, SavedSession } from '../durable-state';
import type { AdoptableProcess, DurableBackend, ProcessExit, SpawnSpec } from './backend';
import { SegmentBytes, SegmentTailer } from './segment-tailer';
import type { TmuxServer } from './tmux';

/**
 * Terminals that outlive ptydeck: each session is a tmux session on ptydeck's own tmux server.
 *
 *   output   the pane's raw bytes go through `pipe-pane` into fixed-size segment files (segment-tailer.ts),
 *            so nothing is lost while ptydeck is down and offsets are the same after a restart;
 *            shell-integration markers pass through untouched, so commands finish as on a native PTY
 *   input    `send-keys -H` through one control-mode client per session (no process per keystroke)
 *   size     `resize-window` (window-size is manual: no client's size interferes)
 *   exit     the pane's shell pid is watched; `remain-on-exit` keeps the pane so its exit status can be read
 * tmux answers terminal queries itself, so the session's screen mirror does not.
 */
const SendKeysChunkBytes = 512;
const ExitPollMs = 200;
/** The longest input is held for a resize to reach the pane (tmux's own resize timer is far shorter). */
const ResizeSettleMs = 1000;

export function tmuxSessionName(sessionId: string): string {
  // tmux names may not contain '.' or ':'; a digest of the id is safe and stable.
  return 'pd-' + createHash('sha256').update(sessionId).digest('hex').slice(0, 20);
}

export class TmuxBackend implements DurableBackend {
  readonly kind = 'tmux' as const;

  constructor(
    readonly server: TmuxServer,
    /** Segments kept on disk behind the one being read (enough to refill the output log after a restart). */
    private readonly keepSegments: number,
    /** The sessions' records, in a file beside the tmux server. */
    private readonly state: DurableState,
  ) {}

  async survivors(): Promise<{ saved: SavedSession; proc: AdoptableProcess }[]> {
    return this.state.load().map((saved) => ({ saved, proc: this.adopt(saved.id) }));
  }

  save(sessions: SavedSession[], now = false): void {
    this.state.save(sessions, now);
  }

  dispose(): void {
    this.state.dispose();
  }

  spawn(spec: SpawnSpec): TmuxProcess {
    if (!spec.sessionId) throw new Error('the tmux backend needs the session id');
    const name = tmuxSessionName(spec.sessionId);
    const dir = this.server.segmentDir(name);
    // A stale tmux session or segment directory with this name belongs to a session that is gone.
    this.server.tryRun(['kill-session', '-t', `=${name}`]);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const env = Object.entries(spec.env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const out = this.server.run([
      'new-session', '-d', '-s', name, '-x', String(spec.cols), '-y', String(spec.rows), '-c', spec.cwd, ...env, '--', spec.file, ...spec.args,
      // umask 077: the segments hold everything the terminal printed; only the user may read them.
      ';', 'pipe-pane', '-t', `=${name}:`, '-o', `umask 077; exec split -b ${SegmentBytes} -a 8 - ${shellQuote(dir + '/seg.')}`,
      ';', 'display-message', '-p', '-t', `=${name}:`, '#{pane_pid} #{pane_id}',
    ]); // prettier-ignore
    const [pid, paneId] = out.trim().split(' ');
    return new TmuxProcess(this.server, name, paneId, Number(pid), dir, this.keepSegments);
  }

  /**
   * Re-attaches to a session a previous ptydeck left running. When its tmux session is gone the process
   * has pid 0: it delivers what the segments still hold, then reports an exit with no status.
   */
  adopt(sessionId: string): TmuxProcess {
    const name = tmuxSessionName(sessionId);
    const dir = this.server.segmentDir(name);
    const out = this.server.tryRun(['display-message', '-p', '-t', `=${name}:`, '#{pane_pid} #{pane_id}']);
    const [pid, paneId] = (out ?? '0 -').trim().split(' ');
    return new TmuxProcess(this.server, name, paneId, Number(pid), dir, this.keepSegments);
  }

  /** Ends the tmux session and removes its files. */
  destroy(sessionId: string): void {
    const name = tmuxSessionName(sessionId);
    this.server.tryRun(['kill-session', '-t', `=${name}`]);
    rmSync(this.server.segmentDir(name), { recursive: true, force: true });
  }
}

export class TmuxProcess implements AdoptableProcess {
  readonly isTty = true;
  readonly answersQueries = true;
  private readonly tailer: SegmentTailer;
  private control: ChildProcess | null = null;
  private readonly dataListeners: ((data: Buffer, channel: number) => void)[] = [];
  private readonly exitListeners: ((exit: ProcessExit) => void)[] = [];
  private exitTimer: NodeJS.Timeout | null = null;
  private exit: ProcessExit | null = null;
  private detached = false;
  private readonly startTime: number | null;
  /** Input waiting for a resize to reach the pane's terminal (null when none is pending). */
  private heldInput: Buffer[] | null = null;
  private resizeToken = 0;

  constructor(
    private readonly server: TmuxServer,
    readonly name: string,
    readonly paneId: string,
    readonly pid: number,
    dir: string,
    keepSegments: number,
  ) {
    this.startTime = readStat(pid)?.startTime ?? null;
    this.tailer = new SegmentTailer(dir, keepSegments, (data) => this.dataListeners.forEach((l) => l(data, 1)));
  }

  /** Where this process's output starts in absolute offsets (after a restart: the oldest segment kept). */
  get initialOffset(): number {
    return this.tailer.startOffset;
  }

  /** Starts following output and watching for the end; called once the session has its listeners. */
  begin(): void {
    if (!this.isShellAlive()) {
      // Adopted after a restart with its shell already gone: read what is left and report the end now,
      // so the session is listed as ended from the first moment.
      this.tailer.pump();
      this.finish(this.deadStatus() ?? { exitCode: null, signal: null });
      return;
    }
    this.tailer.start();
    this.exitTimer = setInterval(() => this.checkExit(), ExitPollMs);
    this.exitTimer.unref();
  }

  private isShellAlive(): boolean {
    const st = this.pid > 0 ? readStat(this.pid) : null;
    return st !== null && st.state !== 'Z' && st.state !== 'X' && (this.startTime === null || st.startTime === this.startTime);
  }

  /**
   * The pane's exit status once tmux has recorded it; null while it has not. tmux marks a pane dead when
   * its terminal closes, which can be before it has reaped the shell: dead with no status yet is not settled.
   */
  private deadStatus(): ProcessExit | null {
    const status = this.server.tryRun(['display-message', '-p', '-t', `=${this.name}:`, '#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}']);
    if (status === null) return { exitCode: null, signal: null };
    const [dead, code, signal] = status.trim().split('|');
    if (dead !== '1' || (!code && !signal)) return null;
    return { exitCode: code ? Number(code) : null, signal: signal ? Number(signal) || null : null };
  }

  /** Keys waiting for the control client, or held for a resize. */
  get pendingInputBytes(): number {
    return (this.control?.stdin?.writableLength ?? 0) + (this.heldInput?.reduce((n, b) => n + b.length, 0) ?? 0);
  }

  write(data: string | Uint8Array): void {
    if (this.exit || this.detached) return;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
    if (this.heldInput) {
      this.heldInput.push(bytes);
      return;
    }
    this.sendKeys(bytes);
  }

  private sendKeys(bytes: Buffer): void {
    const lines: string[] = [];
    for (let i = 0; i < bytes.length; i += SendKeysChunkBytes) {
      const hex = bytes.subarray(i, i + SendKeysChunkBytes).toString('hex').replace(/(..)(?!$)/g, '$1 ');
      lines.push(`send-keys -t ${this.paneId} -H ${hex}\n`);
    }
    this.controlClient().stdin!.write(lines.join(''));
  }

  resize(cols: number, rows: number): void {
    if (this.exit || this.detached) return;
    this.server.tryRun(['resize-window', '-t', `=${this.name}:`, '-x', String(cols), '-y', String(rows)]);
    // tmux sets the pane's terminal size on a timer, after later commands: keys sent now would reach a
    // program that still has the old size. Hold input until the pane's tty reports the new size.
    const tty = this.server.tryRun(['display-message', '-p', '-t', `=${this.name}:`, '#{pane_tty}'])?.trim();
    if (!tty) return;
    this.heldInput ??= [];
    const token = ++this.resizeToken;
    const deadline = Date.now() + ResizeSettleMs;
    const check = (): void => {
      if (token !== this.resizeToken) return;
      execFile('stty', [process.platform === 'darwin' ? '-f' : '-F', tty, 'size'], { timeout: 1000 }, (err, out) => {
        if (token !== this.resizeToken) return;
        if (!err && out.trim() !== `${rows} ${cols}` && Date.now() < deadline) {
          setTimeout(check, 10);
          return;
        }
        const held = this.heldInput ?? [];
        this.heldInput = null;
        for (const b of held) this.sendKeys(b);
      });
    };
    check();
  }

  kill(): void {
    this.server.tryRun(['kill-session', '-t', `=${this.name}`]);
  }

  onData(listener: (data: Buffer, channel: number) => void): void {
    this.dataListeners.push(listener);
  }

  onExit(listener: (exit: ProcessExit) => void): void {
    if (this.exit) listener(this.exit);
    else this.exitListeners.push(listener);
  }

  /** Stops following the session but leaves it running in tmux (ptydeck is quitting; the session survives). */
  detach(): void {
    this.detached = true;
    this.stopWatching();
  }

  private controlClient(): ChildProcess {
    if (this.control && this.control.exitCode === null && !this.control.killed) return this.control;
    const { file, args, env } = this.server.controlClientArgs(`=${this.name}`);
    const child = spawn(file, args, { env, stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin!.on('error', () => undefined);
    child.on('error', () => undefined);
    this.control = child;
    return child;
  }

  private checkExit(): void {
    if (this.exit || this.detached || this.isShellAlive()) return;
    this.stopWatching(false);
    // Deliver what the shell printed last, and let tmux notice the death (the shell may be a zombie
    // before tmux has reaped it and recorded its status), before reporting the end.
    // (tmux does not always record a status; then the session uses the one the shell announced.)
    const drain = (deadline: number): void => {
      this.tailer.pump();
      const status = this.deadStatus();
      if ((this.tailer.idleFor < 150 || !status) && Date.now() < deadline) {
        setTimeout(() => drain(deadline), 50);
        return;
      }
      this.finish(status ?? { exitCode: null, signal: null });
    };
    drain(Date.now() + 500);
  }

  private finish(exit: ProcessExit): void {
    if (this.exit) return;
    this.exit = exit;
    this.tailer.stop();
    this.control?.kill();
    for (const l of this.exitListeners.splice(0)) l(exit);
  }

  private stopWatching(stopTailer = true): void {
    if (this.exitTimer) clearInterval(this.exitTimer);
    this.exitTimer = null;
    if (stopTailer) this.tailer.stop();
    if (this.control) {
      // Closing its stdin detaches the control client; the tmux session is untouched.
      this.control.stdin?.end();
      this.control = null;
    }
  }
}
