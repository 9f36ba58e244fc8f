import type { ProcessExit, TerminalProcess } from '../backends/backend';
import { HostConstants } from '../constants';
import { LogCursor, OutputHub } from '../output-hub';
import { OutputLog } from '../output-log';
import type { HostedSessionInfo } from './protocol';

/**
 * One terminal inside the PTY host: the PTY, its output log (absolute offsets, bounded), and at most
 * one attached server, which follows the log with a cursor, as a WebSocket client does in the server.
 *
 * The PTY is paused (the program blocks on write, as on any terminal whose reader stalls) whenever
 * reading on would cost bytes someone may still want:
 * - a server is attached and far behind (or asks us to hold for a slow client of its own);
 * - a server is attached and the log is full of bytes it asked us to keep (KEEP): what its agents'
 *   sockets have not handed to the kernel yet exists only in that server, and would die with it;
 * - no server is attached and the log is full. The server that went away (a crash, a restart) or its
 *   clients may want anything the log still holds: a client lags its server, and bytes handed to a
 *   socket that died were never read. So nothing is evicted until a server attaches again, and it
 *   catches up from wherever it asks before the PTY is read again.
 */
export interface OutputSink {
  /** Hands one OUTPUT frame to the connection; `flushed` runs once the kernel has it. */
  output(handle: number, offset: number, payload: Buffer, flushed: () => void): void;
  exit(handle: number, exit: ProcessExit): void;
  synced(handle: number, token: number): void;
}

interface Attachment {
  sink: OutputSink;
  handle: number;
  cursor: LogCursor;
  /** This server asked to hold the PTY back for a slow client of its own (its successor has not). */
  held: boolean;
  exitSent: boolean;
  /** SYNC tokens to answer once the cursor has sent everything read so far. */
  syncs: number[];
}

export class HostedSession {
  readonly log: OutputLog;
  exit: ProcessExit | null = null;
  readonly startTime: number | null;
  private readonly hub: OutputHub;
  private attachment: Attachment | null = null;
  private paused = false;
  /** When output last arrived (the host's memory budget spills the least recently active first). */
  lastActiveAt = Date.now();
  private readonly overListeners: (() => void)[] = [];

  constructor(
    readonly id: string,
    readonly proc: TerminalProcess,
    logBytes: number,
    public record: unknown,
    startTime: number | null,
    memory: { noteGrowth(bytes: number): void } | null = null,
  ) {
    this.log = new OutputLog(logBytes);
    // Until a server attaches (at once, after a spawn), nobody has read anything.
    this.log.keepFrom = -Infinity;
    this.startTime = startTime;
    this.hub = new OutputHub(() => this.checkFlow());
    proc.onData((data) => {
      this.lastActiveAt = Date.now();
      this.log.append(data);
      memory?.noteGrowth(data.length);
      this.hub.notify(data.length);
      this.checkFlow();
    });
    proc.onExit((e) => {
      this.exit = e;
      this.hub.flush();
      this.over();
    });
  }

  get pid(): number {
    return this.proc.pid;
  }

  info(): HostedSessionInfo {
    return { id: this.id, pid: this.pid, startTime: this.startTime, logStart: this.log.start, logEnd: this.log.end, exit: this.exit, record: this.record };
  }

  /** Streams output from `from` (clamped to what the log holds) to `sink`; a previous attachment ends. */
  attach(sink: OutputSink, handle: number, from: number): void {
    this.detach();
    const att: Attachment = {
      sink,
      handle,
      held: false,
      exitSent: false,
      syncs: [],
      cursor: new LogCursor({
        log: this.log,
        from: Math.min(Math.max(from, this.log.start), this.log.end),
        wholeCharacters: false,
        maxFrameBytes: HostConstants.MaxFrameBytes,
        send: (payload, _channel, at, flushed) =>
          sink.output(handle, at, payload, () => {
            flushed();
            this.checkFlow();
          }),
        // Bytes the log dropped before this server read them: the next frame's offset says where it resumes.
        onGap: () => true,
      }),
    };
    this.attachment = att;
    // Its cursor now says what is still wanted (flow control keeps it within the log), and its KEEP
    // frames what its clients still want.
    this.log.keepFrom = Infinity;
    this.hub.attach(att.cursor);
    att.cursor.pump();
    this.checkFlow();
  }

  /** The attached server went away (its connection closed): read on only while the log has room. */
  detach(sink?: OutputSink): void {
    const att = this.attachment;
    if (!att || (sink && att.sink !== sink)) return;
    att.cursor.stop();
    this.hub.detach(att.cursor);
    this.attachment = null;
    this.log.keepFrom = -Infinity;
    this.checkFlow();
  }

  /**
   * Answers once every byte the PTY holds now has been read and handed to the connection: one turn of
   * the loop reads the PTY dry (its poll phase), the flush sends it, and SYNCED follows those frames.
   */
  sync(sink: OutputSink, token: number): void {
    // Bytes on their way to the master (node-pty-backend.ts readNow) are read before the loop turns.
    this.proc.readNow?.();
    setImmediate(() => {
      const att = this.attachment;
      if (!att || att.sink !== sink) {
        sink.synced(0, token);
        return;
      }
      att.syncs.push(token);
      this.hub.flush();
      this.checkFlow();
    });
  }

  hold(on: boolean): void {
    if (!this.attachment) return;
    this.attachment.held = on;
    this.checkFlow();
  }

  /** The attached server's clients may still want every byte from `from` on. */
  keep(sink: OutputSink, from: number): void {
    if (this.attachment?.sink !== sink) return;
    this.log.keepFrom = from;
    this.checkFlow();
  }

  isAttachedTo(sink: OutputSink): boolean {
    return this.attachment?.sink === sink;
  }

  /**
   * Pauses or resumes the PTY by how far the attached server lags, or, with none, by whether the log is
   * full; reports the exit once the server has every byte.
   */
  private checkFlow(): void {
    const att = this.attachment;
    const lag = att ? this.log.end - att.cursor.offset + att.cursor.unflushed : 0;
    const pauseAbove = Math.min(HostConstants.PauseAboveBytes, this.log.capacity / 2);
    // A log full of bytes it must keep (all of them, with no server) stays full until the mark moves.
    const full = this.log.keptFull;
    if (!this.paused && !this.exit && (full || (att && (lag > pauseAbove || att.held)))) {
      this.paused = true;
      this.proc.pause?.();
    } else if (this.paused && !full && (!att || (!att.held && lag < Math.min(HostConstants.ResumeBelowBytes, pauseAbove / 2)))) {
      this.paused = false;
      this.proc.resume?.();
    }
    if (att && att.syncs.length && att.cursor.offset >= this.log.end) for (const t of att.syncs.splice(0)) att.sink.synced(att.handle, t);
    if (att && this.exit && !att.exitSent && att.cursor.offset >= this.log.end) {
      att.exitSent = true;
      att.sink.exit(att.handle, this.exit);
    }
  }

  /**
   * Runs `fn` once, when the shell has exited or the session was ended (released by its server, or
   * the host ending everything), whichever comes first: the host may exit before it sees the shell end.
   */
  whenOver(fn: () => void): void {
    this.overListeners.push(fn);
  }

  private over(): void {
    for (const fn of this.overListeners.splice(0)) fn();
  }

  /** Ends the shell if it still runs (the server has torn its tree down already, as a rule). */
  end(): void {
    this.over();
    this.detach();
    // Nobody will read it again: its program must be able to write its way to the end (and node-pty
    // to see it exit) rather than wait for a server forever.
    this.log.keepFrom = Infinity;
    this.checkFlow();
    if (this.exit) return;
    this.proc.kill('SIGHUP');
    const timer = setTimeout(() => {
      if (!this.exit) this.proc.kill('SIGKILL');
    }, HostConstants.ReleaseKillMs);
    timer.unref();
  }
}
