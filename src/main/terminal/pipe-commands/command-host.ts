import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { OutputChannel } from '../../../shared/types';
import type { TerminalProcess } from '../backends/backend';
import type { OutputLog } from '../output-log';
import { Stream, StreamIndex, type StreamChannel } from './stream-index';
import { Waiters } from '../waiters';

/**
 * The process side of a bash-API session (AIO's `/v1/bash`): no shell waits at a prompt; each command is
 * its own `bash -c` in its own process group, on pipes, with stdout and stderr apart. The host is the
 * session's TerminalProcess, so its output takes the session's one output path (log, viewers, other
 * doors), and closing the session tears its commands down like any shell's.
 *
 * Commands may overlap (an async one runs while the next starts); they share the two streams, whose
 * offsets the StreamIndex keeps. Besides stdout (channel 1) and stderr (channel 2) the host writes a
 * short transcript to the log on channel 3, the command line before a command and its end after it,
 * so that a person watching sees what ran; the streams the API reads never contain it.
 */
export const PipeCommandConstants = {
  /** Linux refuses a single argv string over 128 KiB (MAX_ARG_STRLEN); longer commands run from a file. */
  ArgvCommandBytes: 100 * 1024,
  /**
   * After bash exits, how long to wait for its pipes to close. A background child (`server &`) keeps
   * them open for ever; the command has still ended, and its exit status is known, so it completes
   * then, and whatever the child prints later still lands in the session's streams.
   */
  AfterExitDrainMs: 500,
  /** stdin bytes a command may leave unread before further writes are refused (else memory grows without bound). */
  StdinBacklogBytes: 1024 * 1024,
  /** How much of a command line the transcript shows; the API keeps it whole. */
  TranscriptCommandChars: 2000,
  /** Commands kept for `command_id` lookups; at this many the oldest half goes (AIO keeps 100, then 50). */
  HistoryEntries: 100,
  /** When output is there but its command has not ended, how long an output read waits for the end (AIO waits 0.1 s too). */
  FinalizeGraceMs: 100,
} as const;

/** Channel of ptydeck's own transcript lines in the session log (never part of stdout or stderr). */
export const TranscriptChannel = OutputChannel.Transcript;

export type PipeCommandStatus = 'running' | 'completed' | 'timed_out' | 'killed';

export interface RunOptions {
  cwd: string;
  /** For this command only. */
  env?: Record<string, string>;
  /** Seconds after which the command's process group gets SIGKILL and it ends `timed_out`. */
  hardTimeoutSecs?: number | null;
  /** Called right before the process starts (after any wait for the exec lock); throws to refuse. */
  admit?: () => void;
}

export interface ExecOptions extends RunOptions {
  /** Answer at once; otherwise wait for the end (or `timeoutSecs`). */
  async?: boolean;
  /** Seconds a synchronous exec waits before answering `running`; the command goes on. */
  timeoutSecs?: number | null;
}

/** The session is closed, or its host was disposed. */
export class HostClosedError extends Error {
  constructor() {
    super('Session is not active: it has been closed');
    this.name = 'HostClosedError';
  }
}

/** The system refused to start the process (argument list or environment too large, no bash). */
export class SpawnRefusedError extends Error {
  constructor(
    message: string,
    readonly field: 'env' | 'command' | null,
  ) {
    super(message);
    this.name = 'SpawnRefusedError';
  }
}

/** stdin was written with no command (or no command of that id) running to read it. */
export class NoRunningProcessError extends Error {
  constructor() {
    super('No running process to write to');
    this.name = 'NoRunningProcessError';
  }
}

export class StdinBacklogError extends Error {
  constructor(pending: number) {
    super(`The command is not reading its input: ${pending} bytes written earlier are still waiting (limit ${PipeCommandConstants.StdinBacklogBytes}); wait, or kill it`);
    this.name = 'StdinBacklogError';
  }
}

export class PipeCommand {
  readonly id = randomUUID();
  status: PipeCommandStatus = 'running';
  /** bash's exit status; a process ended by a signal reports minus the signal's number (-15 for SIGTERM). */
  exitCode: number | null = null;
  readonly startedAt = new Date();
  finishedAt: Date | null = null;
  /** Stream offsets where this command's output starts, and (once it ended) ends. */
  readonly stdoutStart: number;
  readonly stderrStart: number;
  stdoutEnd: number | null = null;
  stderrEnd: number | null = null;
  /** A kill (or the session's close) signalled it: ending by a signal then reads as `killed`. */
  killRequested = false;
  /** The process has exited (its pipes may still be open). */
  exited = false;
  child: ChildProcess | null = null;
  scriptFile: string | null = null;
  hardTimer: NodeJS.Timeout | null = null;
  drainTimer: NodeJS.Timeout | null = null;
  /** What the session's own command list tracks for it (set by whoever wires the host to a session). */
  tag: unknown = null;

  constructor(
    readonly command: string,
    streams: StreamIndex,
  ) {
    this.stdoutStart = streams.end(Stream.Stdout);
    this.stderrStart = streams.end(Stream.Stderr);
  }

  get finished(): boolean {
    return this.status !== 'running';
  }

  /** Its stdin still leads to a live process. */
  get takesInput(): boolean {
    return !this.finished && !this.exited && this.child?.stdin?.writable === true;
  }
}

export interface CommandHostOptions {
  /** The bash binary. */
  bash: string;
  /** The session's environment (sanitized and tagged); every command starts from it. */
  env: Record<string, string>;
  /** The session's output log: where the host's output lands, and what stream offsets map onto. */
  log: OutputLog;
  /** A script sourced before every command (AIO's `snapshot_path`, copied at creation). */
  snapshot?: string | null;
  started?(cmd: PipeCommand): void;
  ended?(cmd: PipeCommand): void;
}

export class CommandHost implements TerminalProcess {
  readonly isTty = false;
  readonly streams: StreamIndex;
  private readonly history: PipeCommand[] = [];
  /** Running commands, oldest first. */
  private readonly running: PipeCommand[] = [];
  private total = 0;
  private readonly dataListeners: ((data: Buffer, channel: number) => void)[] = [];
  private readonly waiters = new Waiters();
  private execQueue: Promise<void> = Promise.resolve();
  private stdinTarget: PipeCommand | null = null;
  private closing = false;
  private disposed = false;
  private lastByteNewline = true;
  private scratch: string | null = null;
  private snapshotFile: string | null = null;

  constructor(private readonly opts: CommandHostOptions) {
    this.streams = new StreamIndex(opts.log);
    if (opts.snapshot != null) {
      this.snapshotFile = join(this.scratchDir(), 'snapshot.sh');
      writeFileSync(this.snapshotFile, opts.snapshot, { mode: 0o600 });
    }
  }

  /** The running command's pid (what a signal to "the foreground" reaches); 0 when nothing runs. */
  get pid(): number {
    return this.current?.child?.pid ?? 0;
  }

  /** The most recently started command still running. */
  get current(): PipeCommand | null {
    return this.running[this.running.length - 1] ?? null;
  }

  /** The running command, else the last one. */
  get latest(): PipeCommand | null {
    return this.current ?? this.history[this.history.length - 1] ?? null;
  }

  /** Commands run since the session began (the history itself is trimmed). */
  get commandCount(): number {
    return this.total;
  }

  get isClosed(): boolean {
    return this.closing || this.disposed;
  }

  find(id: string): PipeCommand | null {
    for (let i = this.history.length - 1; i >= 0; i--) if (this.history[i].id === id) return this.history[i];
    return null;
  }

  /** Starts `command` now, whatever else runs. */
  run(command: string, opts: RunOptions): PipeCommand {
    if (this.isClosed) throw new HostClosedError();
    opts.admit?.();
    const cmd = new PipeCommand(command, this.streams);
    const env = { ...this.opts.env, ...(this.snapshotFile ? { BASH_ENV: this.snapshotFile } : {}), ...(opts.env ?? {}) };
    // --norc: with a socket for stdin (Node's pipes are) and SHLVL below 1, bash takes itself for rshd's
    // and reads ~/.bashrc first (BASH_ENV, the snapshot, is still read).
    let args = ['--norc', '-c', command];
    if (Buffer.byteLength(command) > PipeCommandConstants.ArgvCommandBytes) {
      cmd.scriptFile = join(this.scratchDir(), `cmd-${randomBytes(6).toString('hex')}.sh`);
      writeFileSync(cmd.scriptFile, command + '\n', { mode: 0o600 });
      args = ['--norc', cmd.scriptFile];
    }
    let child: ChildProcess;
    try {
      // detached: its own session and process group, so a signal reaches everything it started.
      child = spawn(this.opts.bash, args, { cwd: opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    } catch (err) {
      if (cmd.scriptFile) rmSync(cmd.scriptFile, { force: true });
      throw spawnRefused(err as NodeJS.ErrnoException);
    }
    cmd.child = child;
    this.transcript(`$ ${transcriptLine(command)}\n`);
    this.total++;
    this.history.push(cmd);
    if (this.history.length >= PipeCommandConstants.HistoryEntries) this.history.splice(0, PipeCommandConstants.HistoryEntries / 2);
    this.running.push(cmd);

    child.stdout!.on('data', (d: Buffer) => this.output(d, Stream.Stdout));
    child.stderr!.on('data', (d: Buffer) => this.output(d, Stream.Stderr));
    child.stdin!.on('error', () => {
      // EPIPE: the command stopped reading; its end is reported by 'close'.
    });
    child.on('error', () => this.finish(cmd, null, null));
    child.on('exit', () => {
      cmd.exited = true;
      cmd.drainTimer = setTimeout(() => this.finish(cmd, child.exitCode, child.signalCode), PipeCommandConstants.AfterExitDrainMs);
    });
    // 'close' waits for stdout and stderr to end, so the command's output is all in before it completes.
    child.on('close', (code, signal) => this.finish(cmd, code, signal));
    if (opts.hardTimeoutSecs != null && opts.hardTimeoutSecs > 0) {
      cmd.hardTimer = setTimeout(() => this.hardTimeout(cmd), opts.hardTimeoutSecs * 1000);
    }
    this.opts.started?.(cmd);
    this.wake();
    return cmd;
  }

  /**
   * Runs `command` under the session's exec lock: a synchronous exec holds it until its command ends
   * (or its `timeoutSecs` pass), so synchronous execs queue; an async one releases it at once.
   */
  async exec(command: string, opts: ExecOptions): Promise<PipeCommand> {
    const previous = this.execQueue;
    let release!: () => void;
    this.execQueue = new Promise((r) => (release = r));
    try {
      await previous;
      const cmd = this.run(command, opts);
      if (!opts.async) {
        const ms = opts.timeoutSecs != null && opts.timeoutSecs > 0 ? opts.timeoutSecs * 1000 : Infinity;
        await this.until(() => cmd.finished || this.isClosed, ms);
      }
      return cmd;
    } finally {
      release();
    }
  }

  /**
   * Long poll: resolves at once when either stream has bytes past the given offsets or `about` (else the
   * latest command) has ended; otherwise when one of those happens, or after `ms`.
   */
  async waitForOutput(stdoutFrom: number, stderrFrom: number, ms: number, about: PipeCommand | null): Promise<void> {
    const target = (): PipeCommand | null => about ?? this.latest;
    const hasNew = (): boolean => this.streams.end(Stream.Stdout) > stdoutFrom || this.streams.end(Stream.Stderr) > stderrFrom;
    const ended = (): boolean => target()?.finished === true;
    if (!hasNew() && !ended()) await this.until(() => hasNew() || ended() || this.isClosed, ms);
    // Output often arrives just before the process exits: a moment's grace lets this answer say so.
    const t = target();
    if (t && !t.finished) await this.until(() => t.finished || this.isClosed, PipeCommandConstants.FinalizeGraceMs);
  }

  /** TerminalProcess: input from any door goes to the command chosen by `withStdinTarget`, else the current one. */
  write(data: string | Uint8Array): void {
    this.writeTo(this.stdinTarget ?? this.current, data);
  }

  /** Runs `fn` (which writes through the session) with `cmd` as the target of its input. */
  withStdinTarget<T>(cmd: PipeCommand | null, fn: () => T): T {
    const before = this.stdinTarget;
    this.stdinTarget = cmd;
    try {
      return fn();
    } finally {
      this.stdinTarget = before;
    }
  }

  private writeTo(cmd: PipeCommand | null, data: string | Uint8Array): void {
    const stdin = cmd?.child?.stdin;
    if (!cmd || !cmd.takesInput || !stdin) throw new NoRunningProcessError();
    if (stdin.writableLength > PipeCommandConstants.StdinBacklogBytes) throw new StdinBacklogError(stdin.writableLength);
    stdin.write(data);
  }

  /**
   * Someone signalled process group `pgid` through the session (the API's kill, the viewer's Interrupt,
   * another door's signal): the command that leads it, if it then dies of a signal, was killed.
   */
  noteSignalled(pgid: number | null): void {
    for (const cmd of this.running) if (pgid !== null && cmd.child?.pid === pgid) cmd.killRequested = true;
  }

  resize(): void {
    // Pipes have no size.
  }

  /** TerminalProcess: the session is closing. Every running command's group gets `signal`; they end `killed`. */
  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    this.closing = true;
    for (const cmd of [...this.running]) {
      cmd.killRequested = true;
      if (cmd.child?.pid && !cmd.exited) signalGroup(cmd.child.pid, signal);
    }
    this.wake();
  }

  onData(listener: (data: Buffer, channel: number) => void): void {
    this.dataListeners.push(listener);
  }

  onExit(): void {
    // The host lives as long as its session; there is no shell to exit.
  }

  /** The session is gone: stop the timers, release waiters, remove the scratch files. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.closing = true;
    for (const cmd of this.running) {
      if (cmd.hardTimer) clearTimeout(cmd.hardTimer);
      if (cmd.drainTimer) clearTimeout(cmd.drainTimer);
    }
    this.wake();
    if (this.scratch) rmSync(this.scratch, { recursive: true, force: true });
    this.scratch = null;
  }

  private output(data: Buffer, channel: StreamChannel): void {
    // The index learns where these bytes land before the session appends them there.
    this.streams.note(channel, this.opts.log.end, data.length);
    this.emit(data, channel);
    this.wake();
  }

  private transcript(text: string): void {
    this.emit(Buffer.from(this.lastByteNewline ? text : `\n${text}`, 'utf8'), TranscriptChannel);
  }

  private emit(data: Buffer, channel: number): void {
    if (data.length === 0) return;
    this.lastByteNewline = data[data.length - 1] === 0x0a;
    for (const l of this.dataListeners) l(data, channel);
  }

  private hardTimeout(cmd: PipeCommand): void {
    if (cmd.finished) return;
    cmd.status = 'timed_out';
    cmd.exitCode = -1;
    cmd.finishedAt = new Date();
    if (cmd.child?.pid) signalGroup(cmd.child.pid, 'SIGKILL');
    this.wake();
  }

  private finish(cmd: PipeCommand, code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.running.includes(cmd)) return;
    this.running.splice(this.running.indexOf(cmd), 1);
    if (cmd.hardTimer) clearTimeout(cmd.hardTimer);
    if (cmd.drainTimer) clearTimeout(cmd.drainTimer);
    if (cmd.scriptFile) rmSync(cmd.scriptFile, { force: true });
    const bySignal = signal ? -(constants.signals[signal] ?? 0) : null;
    if (cmd.status === 'running') {
      const killed = cmd.killRequested && (bySignal !== null || this.closing);
      cmd.status = killed || (code === null && bySignal === null) ? 'killed' : 'completed';
      cmd.exitCode = bySignal ?? code ?? -1;
      cmd.finishedAt = new Date();
    }
    cmd.stdoutEnd = this.streams.end(Stream.Stdout);
    cmd.stderrEnd = this.streams.end(Stream.Stderr);
    this.transcript(`${endLine(cmd, signal)}\n`);
    this.opts.ended?.(cmd);
    this.wake();
  }

  /** Resolves once `done()` holds, or after `ms` (Infinity waits for it). */
  private async until(done: () => boolean, ms: number): Promise<void> {
    await this.waiters.until(done, ms);
  }

  private wake(): void {
    this.waiters.wake();
  }

  private scratchDir(): string {
    this.scratch ??= mkdtempSync(join(tmpdir(), 'ptydeck-bash-'));
    return this.scratch;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

function spawnRefused(err: NodeJS.ErrnoException): Error {
  if (err.code === 'E2BIG') {
    return new SpawnRefusedError('env: the command and its environment are too large for the system to start a process (E2BIG); each variable must stay under 128 KiB', 'env');
  }
  return new SpawnRefusedError(`could not start bash: ${err.message}`, null);
}

function transcriptLine(command: string): string {
  const max = PipeCommandConstants.TranscriptCommandChars;
  const shown = command.length > max ? `${command.slice(0, max)}…` : command;
  // Continuation lines look as bash's PS2 would show them.
  return shown.replace(/\r?\n/g, '\n> ');
}

function endLine(cmd: PipeCommand, signal: NodeJS.Signals | null): string {
  switch (cmd.status) {
    case 'timed_out':
      return '[timed out: killed]';
    case 'killed':
      return signal ? `[killed by ${signal}]` : '[killed]';
    default:
      return signal ? `[ended by ${signal}]` : `[exit ${cmd.exitCode}]`;
  }
}
