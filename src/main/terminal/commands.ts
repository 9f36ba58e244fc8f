import type { CommandInfo, CommandStatus, ShellState } from '../../shared/types';
import { CommandConstants } from './constants';
import { SYSTEM, type Actor } from './actor';
import type { Marker } from './marker-scanner';
import { DeniedError, LineGateConstants } from './line-gate';
import type { GateEvent } from './line-gate-link';
import type { OutputLog } from './output-log';
import { renderPlainText } from './plain-text';
import { encodeCommand, shellQuote, type ShellKind } from './shell-integration';
import { utf8Head, utf8Tail } from './utf8';
import { rmSync } from 'node:fs';
import { Waiters } from './waiters';

/**
 * Commands in a session's shell: their start, end, exit code and output, learned from the shell's own
 * markers (shell-integration.ts) as they pass through the output path. One command runs at a time.
 *
 * A command typed at the prompt (by a person in the viewer, or by an agent through raw input) is
 * tracked too: its C marker opens a record whose text is read back from the echoed line.
 */
export interface ConsoleEntry {
  ps1: string;
  command: string;
  output: string;
}

export interface ExecOptions {
  async?: boolean;
  /** Seconds after which the call returns `running` while the command goes on. */
  timeoutSecs?: number | null;
  /** Seconds after which the command is interrupted (^C) and reported as hard_timeout. */
  hardTimeoutSecs?: number | null;
  /** Seconds without output after which a synchronous call interrupts the command (no_change_timeout). */
  noChangeTimeoutSecs?: number | null;
  /** Move the shell to this directory first (AIO v1's exec_dir); the move persists, as a typed cd would. */
  cwd?: string;
  /** Who runs it (the floor may refuse an agent). */
  writer: Actor;
}

export class BusyError extends Error {
  constructor() {
    super('Session already has a running command');
    this.name = 'BusyError';
  }
}

export class NotActiveError extends Error {
  constructor(detail: string) {
    super(`Session is not active: ${detail}`);
    this.name = 'NotActiveError';
  }
}

/** The console's ps1 as AIO reports it (seed 003); the real prompt shows the directory too. */
const CONSOLE_PS1 = '$ ';

export interface CommandHost {
  readonly log: OutputLog;
  readonly shellKind: ShellKind;
  /** A private directory for command files (made on first use; null if it cannot be). */
  scriptDir(): string | null;
  isAlive(): boolean;
  /** Types into the terminal, subject to the floor; `command` names what the keys run, when they run one. */
  typeKeys(text: string, writer: Actor, command?: string): void;
  /** Signals the terminal's foreground group if it is not the shell's own; false when there is none. */
  signalForeground(signal: NodeJS.Signals): boolean;
  lastOutputAt(): number;
  /** Milliseconds the session has spent waiting for a person's decision (line-gate.ts): no timer runs meanwhile. */
  heldMs(): number;
  isHeld(): boolean;
  changed(): void;
}

export class CommandRecord {
  status: CommandStatus = 'running';
  exitCode: number | null = null;
  outputStart: number | null = null;
  outputEnd: number | null = null;
  /** The shell printed its next prompt (or exited): no more output belongs to this command. */
  shellDone = false;
  /** The shell said it runs the line (C marker). */
  began = false;
  readonly startedAt = new Date();
  finishedAt: Date | null = null;
  scriptFile?: string;
  hardTimer: NodeJS.Timeout | null = null;
  /** Set when the line was refused (status `denied`): what the caller is told. */
  denial: DeniedError | null = null;
  private readonly waiters = new Waiters();

  constructor(
    readonly id: number,
    public command: string | null,
    readonly source: 'exec' | 'typed',
    readonly writeOffset: number,
    readonly echoLines: number,
  ) {}

  get finished(): boolean {
    return this.status !== 'running';
  }

  info(): CommandInfo {
    return {
      command: this.command,
      source: this.source,
      status: this.status,
      exitCode: this.status === 'completed' ? this.exitCode : null,
      startedAt: this.startedAt.toISOString(),
      finishedAt: this.finishedAt?.toISOString() ?? null,
    };
  }

  /** Resolves true when `done()` holds, false after `ms` (Infinity waits for ever). */
  until(done: () => boolean, ms: number): Promise<boolean> {
    return this.waiters.until(done, ms);
  }

  wake(): void {
    this.waiters.wake();
  }
}

export type ExecOutcome = 'completed' | 'timeout' | 'async' | 'hard_timeout' | 'no_change_timeout' | 'terminated';

export class CommandTracker {
  state: ShellState = 'starting';
  current: CommandRecord | null = null;
  last: CommandRecord | null = null;
  readonly console: ConsoleEntry[] = [];
  private promptEnd = 0;
  /** The shell has drawn a whole prompt at least once (B marker): before that, typed keys race readline. */
  private promptDrawn = false;
  private nextId = 1;
  private readonly readyWaiters = new Set<() => void>();

  constructor(private readonly host: CommandHost) {}

  /** The running command, else the last one. */
  get latest(): CommandRecord | null {
    return this.current ?? this.last;
  }

  onMarker(m: Marker): void {
    if (m.kind === 'X') return;
    if (m.kind === 'B') {
      // A prompt is drawn only after the line before it ended. A line that began and never said it ended
      // lost its D marker (garbled by bytes echoed into the middle of it, or anything else the scanner
      // could not take), and would otherwise run for ever: it ends here, its exit status unknown.
      const rec = this.current;
      if (rec && !rec.shellDone && rec.began && rec.outputStart !== null && m.start >= rec.outputStart) {
        this.lineEnded(rec, this.host.log.lineStartBefore(m.start, 1, rec.outputStart) ?? m.start, null);
      }
      this.promptEnd = m.end;
      this.promptDrawn = true;
      if (!this.current) this.setState('prompt');
      this.wakeReady();
      return;
    }
    if (m.kind === 'C') {
      let rec = this.current;
      if (!rec || rec.shellDone) {
        rec = new CommandRecord(this.nextId++, this.echoedLine(this.promptEnd, m.start), 'typed', this.promptEnd, 1);
        this.current = rec;
      }
      if (rec.outputStart === null) rec.outputStart = m.end;
      rec.began = true;
      this.setState('busy');
      return;
    }
    // D: the shell is back at its prompt.
    const rec = this.current;
    if (rec && !rec.shellDone) this.lineEnded(rec, m.start, m.exitCode);
    this.promptEnd = m.end;
    this.setState('prompt');
  }

  /** The running line's output ends at `at`, with this exit status (null: unknown). */
  private lineEnded(rec: CommandRecord, at: number, exitCode: number | null): void {
    rec.outputEnd = at;
    if (rec.outputStart === null) rec.outputStart = this.afterEcho(rec, at);
    if (rec.status === 'running') {
      rec.status = 'completed';
      rec.exitCode = exitCode;
    }
    this.finish(rec);
  }

  /** The line gate waits for, or has reached, a decision about the line now running. */
  onGate(e: GateEvent): void {
    const rec = this.current;
    if (!rec || rec.shellDone) return;
    if (e.state === 'decided' && !e.allowed && rec.status === 'running') {
      rec.status = 'denied';
      rec.exitCode = null;
      rec.finishedAt = new Date();
      rec.denial = new DeniedError(e.message, e.reason);
      this.host.changed();
    }
    rec.wake();
  }

  onShellExit(): void {
    const rec = this.current;
    if (rec && !rec.shellDone) {
      rec.outputEnd = this.host.log.end;
      if (rec.outputStart === null) rec.outputStart = this.afterEcho(rec, this.host.log.end);
      if (rec.status === 'running') rec.status = 'terminated';
      this.finish(rec);
    }
    this.setState('exited');
    this.wakeReady();
  }

  /** Resolves once the shell has drawn its first whole prompt (true), or has exited or timed out (false). */
  whenReady(timeoutMs: number): Promise<boolean> {
    if (this.promptDrawn || this.state === 'exited') return Promise.resolve(this.state !== 'exited');
    return new Promise((resolve) => {
      const done = (): void => {
        if (!this.promptDrawn && this.state !== 'exited' && !timedOut) return;
        clearTimeout(timer);
        this.readyWaiters.delete(done);
        resolve(this.promptDrawn && this.state !== 'exited');
      };
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        done();
      }, timeoutMs);
      this.readyWaiters.add(done);
    });
  }

  async exec(command: string, opts: ExecOptions): Promise<{ record: CommandRecord; outcome: ExecOutcome }> {
    if (!this.promptDrawn) await this.whenReady(CommandConstants.ShellStartTimeoutMs);
    if (!this.host.isAlive() || this.state === 'exited') throw new NotActiveError('its shell has exited');
    if (this.current && !this.current.shellDone) throw new BusyError();
    if (!this.promptDrawn) throw new NotActiveError('its shell did not print a prompt in time');
    // A leading cd on its own line keeps the user's command exactly as given (a `&&` would change its meaning).
    const typed = opts.cwd ? `cd -- ${shellQuote(opts.cwd)}\n${command}` : command;
    const encoded = encodeCommand(this.host.shellKind, typed, () => this.host.scriptDir());
    const rec = new CommandRecord(this.nextId++, command, 'exec', this.host.log.end, encoded.echoLines);
    rec.scriptFile = encoded.scriptFile;
    // The floor check happens in typeKeys, before the record is published.
    this.host.typeKeys(encoded.text, opts.writer, command);
    this.current = rec;
    this.setState('busy');

    // Time spent waiting for a person's decision does not count against any of the timeouts below.
    const heldAtStart = this.host.heldMs();
    const heldSince = (): number => this.host.heldMs() - heldAtStart;
    if (opts.hardTimeoutSecs != null && opts.hardTimeoutSecs > 0) {
      const hardMs = opts.hardTimeoutSecs * 1000;
      const arm = (ms: number): void => {
        rec.hardTimer = setTimeout(() => {
          const left = hardMs - (Date.now() - rec.startedAt.getTime() - heldSince());
          if (left > 0) arm(left);
          else void this.interrupt(rec, 'hard_timeout');
        }, ms);
      };
      arm(hardMs);
    }
    if (opts.async) return { record: rec, outcome: 'async' };

    const callTimeoutMs = opts.timeoutSecs != null && opts.timeoutSecs > 0 ? opts.timeoutSecs * 1000 : Infinity;
    const noChangeMs = opts.noChangeTimeoutSecs != null && opts.noChangeTimeoutSecs > 0 ? opts.noChangeTimeoutSecs * 1000 : Infinity;
    const started = rec.startedAt.getTime();
    let noChangeFired = false;
    let quietSince = started;
    // Wake up for whichever comes first: the end, the call's timeout, or a quiet spell of noChangeMs.
    while (!rec.finished) {
      if (this.host.isHeld()) {
        // A person is deciding: wait for the decision with no clock running, then count quiet from it.
        await rec.until(() => rec.finished || !this.host.isHeld(), Infinity);
        quietSince = Date.now();
        continue;
      }
      const deadline = started + heldSince() + callTimeoutMs;
      const quietDeadline = Math.max(this.host.lastOutputAt(), quietSince) + noChangeMs;
      const wakeAt = Math.min(deadline, quietDeadline);
      await rec.until(() => rec.finished || this.host.isHeld(), wakeAt - Date.now());
      if (rec.finished || this.host.isHeld()) continue;
      const now = Date.now();
      if (now >= started + heldSince() + callTimeoutMs) return { record: rec, outcome: 'timeout' };
      if (now >= Math.max(this.host.lastOutputAt(), quietSince) + noChangeMs) {
        noChangeFired = true;
        await this.interrupt(rec, 'no_change_timeout');
        break;
      }
    }
    if (rec.status === 'denied') {
      // Refused: it never ran. Answer once the shell is back at its prompt, so the next call finds it ready.
      await rec.until(() => rec.shellDone, LineGateConstants.PromptAfterDenialMs);
      throw rec.denial ?? new DeniedError('Denied', 'denied');
    }
    if (!noChangeFired && (rec.status === 'hard_timeout' || rec.status === 'no_change_timeout')) {
      // A hard timeout fired while we waited: answer once the interrupt has settled.
      await rec.until(() => rec.shellDone, CommandConstants.InterruptGraceMs * 3);
    }
    const outcome: ExecOutcome = rec.status === 'running' ? 'timeout' : rec.status;
    return { record: rec, outcome };
  }

  /**
   * A command whose start and end the caller knows without markers (the bash API runs each command as a
   * process of its own on pipes). Its output is the log between `begin` and `end`, as for any command.
   */
  begin(command: string): CommandRecord {
    const rec = new CommandRecord(this.nextId++, command, 'exec', this.host.log.end, 0);
    rec.outputStart = rec.writeOffset;
    this.current = rec;
    this.setState('busy');
    return rec;
  }

  /** Ends a command `begin` opened; `stillRunning` is another of them that becomes the current one. */
  end(rec: CommandRecord, status: CommandStatus, exitCode: number | null, stillRunning: CommandRecord | null): void {
    if (rec.shellDone) return;
    rec.outputEnd = this.host.log.end;
    rec.status = status;
    rec.exitCode = exitCode;
    this.finish(rec);
    if (!this.current && stillRunning && !stillRunning.shellDone) this.current = stillRunning;
    this.setState(this.current ? 'busy' : 'prompt');
  }

  /** Waits until the running command ends or `ms` pass; at once when nothing runs. */
  async wait(ms: number): Promise<CommandRecord | null> {
    const rec = this.current;
    if (rec && !rec.finished) await rec.until(() => rec.finished, ms);
    return this.latest;
  }

  /** The command's output as a person would read it (no echo, no markers, no escapes), untruncated. */
  outputText(rec: CommandRecord): string {
    return this.render(rec, CommandConstants.RenderWindowBytes).text;
  }

  /**
   * The output as the console keeps it (seed 003: over 30,000 bytes, the first and last 15,000). Every
   * command that ends renders this, so only as much of the log is rendered as those bytes need: a small
   * window first (a command that printed megabytes cost a 256 KiB render), the full one if escapes made
   * either end of it render shorter than what is kept.
   */
  private consoleText(rec: CommandRecord): string {
    const keep = CommandConstants.TruncateKeepBytes;
    const small = this.render(rec, CommandConstants.ConsoleRenderWindowBytes);
    const enough = !small.windowed || (small.headBytes >= keep && small.tailBytes >= keep);
    return truncateOutput(enough ? small.text : this.outputText(rec));
  }

  /** Renders the output, or only its first and last window/2 bytes of log with a notice between. */
  private render(rec: CommandRecord, window: number): { text: string; windowed: boolean; headBytes: number; tailBytes: number } {
    const log = this.host.log;
    const none = { text: '', windowed: false, headBytes: 0, tailBytes: 0 };
    const start = rec.outputStart ?? (rec.source === 'exec' ? this.afterEcho(rec, log.end, true) : null);
    if (start === null) return none;
    const end = rec.outputEnd ?? log.end;
    if (end <= start) return none;
    const lost = log.start > start;
    const from = Math.max(start, log.start);
    const prefix = lost ? `[... earlier output was dropped from the session log ...]\n` : '';
    if (end - from <= window) return { ...none, text: prefix + renderPlainText(log.read(from, end).toString('utf8')) };
    const head = renderPlainText(log.read(from, from + window / 2).toString('utf8'));
    const tail = renderPlainText(log.read(end - window / 2, end).toString('utf8'));
    return { text: prefix + head + CommandConstants.TruncationNotice + tail, windowed: true, headBytes: Buffer.byteLength(prefix + head), tailBytes: Buffer.byteLength(tail) };
  }

  private async interrupt(rec: CommandRecord, status: 'hard_timeout' | 'no_change_timeout'): Promise<void> {
    if (rec.finished || rec.shellDone) return;
    rec.status = status;
    rec.exitCode = null;
    rec.finishedAt = new Date();
    rec.wake();
    this.host.changed();
    if (!this.host.isAlive()) return;
    this.host.typeKeys('\x03', SYSTEM);
    const grace = CommandConstants.InterruptGraceMs;
    if (await rec.until(() => rec.shellDone, grace)) return;
    // ^C did not bring the prompt back (the program ignores SIGINT, or the terminal is in raw mode).
    if (this.host.signalForeground('SIGTERM') && (await rec.until(() => rec.shellDone, grace))) return;
    if (this.host.signalForeground('SIGKILL')) await rec.until(() => rec.shellDone, grace);
  }

  private finish(rec: CommandRecord): void {
    rec.shellDone = true;
    rec.finishedAt ??= new Date();
    if (rec.hardTimer) clearTimeout(rec.hardTimer);
    if (rec.scriptFile) rmSync(rec.scriptFile, { force: true });
    this.console.push({ ps1: CONSOLE_PS1, command: rec.command ?? '', output: this.consoleText(rec) });
    if (this.console.length > CommandConstants.ConsoleEntries) this.console.splice(0, this.console.length - CommandConstants.ConsoleEntries);
    this.last = rec;
    if (this.current === rec) this.current = null;
    rec.wake();
    this.host.changed();
  }

  /** Where output begins when the shell gave no C marker: after the lines the terminal echoed. */
  private afterEcho(rec: CommandRecord, limit: number, pending = false): number | null {
    const log = this.host.log;
    let pos = Math.max(rec.writeOffset, log.start);
    for (let i = 0; i < rec.echoLines; i++) {
      const nl = log.indexOf(Buffer.from('\n'), pos, Math.min(limit, pos + 64 * 1024));
      if (nl < 0) return pending ? null : limit;
      pos = nl + 1;
    }
    return pos;
  }

  private echoedLine(from: number, to: number): string | null {
    const log = this.host.log;
    const lo = Math.max(from, to - 16 * 1024, log.start);
    if (to <= lo) return null;
    const text = renderPlainText(log.read(lo, to).toString('utf8')).trim();
    return text || null;
  }

  private setState(s: ShellState): void {
    if (this.state === s || this.state === 'exited') return;
    this.state = s;
    this.host.changed();
  }

  private wakeReady(): void {
    for (const w of [...this.readyWaiters]) w();
  }
}

/** seed 003: over 30,000 bytes keep the first and last 15,000 with a notice between. */
export function truncateOutput(text: string): string {
  if (Buffer.byteLength(text) <= CommandConstants.TruncateAboveBytes) return text;
  return utf8Head(text, CommandConstants.TruncateKeepBytes) + CommandConstants.TruncationNotice + utf8Tail(text, CommandConstants.TruncateKeepBytes);
}
