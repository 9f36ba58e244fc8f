import { closeSync, constants as fsConstants, openSync, readFileSync, readSync } from 'node:fs';
import * as pty from 'node-pty';
import { reportSessionFailure, type Backend, type ProcessExit, type SpawnSpec, type TerminalProcess } from './backend';
import { PtyWriter } from './pty-writer';
import { readIntoSharedBuffer, sharedReadBuffer } from './shared-read-buffer';

/** A real pseudo-terminal per session, through node-pty. */
export class NodePtyBackend implements Backend {
  readonly kind = 'native' as const;

  spawn(spec: SpawnSpec): TerminalProcess {
    const proc = pty.spawn(spec.file, spec.args, {
      name: spec.env.TERM ?? 'xterm-256color',
      cols: spec.cols,
      rows: spec.rows,
      cwd: spec.cwd,
      env: spec.env,
      // Bytes, not strings: the output log is addressed by byte offset and must never re-encode.
      encoding: null,
    } as pty.IPtyForkOptions);
    return new NodePtyProcess(proc);
  }
}

/** After the child exits, how long the PTY must stay silent before it is let go, and the cap. */
const DrainQuietMs = 50;
const DrainMaxMs = 5000;
/** readNow: how many reads at most (a program printing on would keep it reading). */
const ReadNowMaxReads = 16;

/** O_NONBLOCK on the descriptor, from /proc (without it a read of our own could block the loop): false when unknown. */
function isNonBlocking(fd: number): boolean {
  try {
    const m = /^flags:\s+([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'));
    return m !== null && (parseInt(m[1], 8) & fsConstants.O_NONBLOCK) !== 0;
  } catch {
    return false;
  }
}

class NodePtyProcess implements TerminalProcess {
  readonly isTty = true;
  private exited = false;
  private lastDataAt = Date.now();
  /** Reading is paused (the PTY host holds a terminal nobody reads): what the PTY holds must wait for us. */
  private paused = false;
  private slaveFd: number | null = null;
  /** Our own writer on the master side (pty-writer.ts); node-pty's only where its descriptor is hidden. */
  private readonly writer: PtyWriter | null;
  /** The master, where a read of our own never blocks (non-blocking descriptor), else null. */
  private readonly masterFd: number | null;
  private readonly listeners: ((data: Buffer, channel: number) => void)[] = [];

  constructor(private readonly proc: pty.IPty) {
    const fd = (proc as unknown as { fd?: unknown }).fd;
    const master = typeof fd === 'number' && fd >= 0 ? fd : null;
    this.writer = master !== null ? new PtyWriter(master) : null;
    this.masterFd = master !== null && isNonBlocking(master) ? master : null;
    const socket = (proc as unknown as { _socket?: unknown })._socket;
    if (!readIntoSharedBuffer(socket, (data) => this.deliver(data))) {
      this.proc.onData((d: string | Buffer) => this.deliver(typeof d === 'string' ? Buffer.from(d, 'utf8') : d));
    }
    this.keepReadingAfterExit();
  }

  get pendingInputBytes(): number {
    return this.writer?.pendingBytes ?? 0;
  }

  whenInputTaken(done: () => void): void {
    if (this.writer) this.writer.whenDrained(done);
    else setImmediate(done);
  }

  /**
   * A program that prints and exits at once must not lose the end of its output. Two things lose it:
   * on Linux, once the last descriptor of the terminal's slave side closes, reading the master may fail
   * (EIO) while bytes are still queued; and node-pty, 200 ms after the child's exit, destroys its socket
   * whatever is left (DESTROY_SOCKET_TIMEOUT_MS in its unixTerminal.js). So this process holds a slave
   * descriptor of its own (O_NOCTTY: it never becomes our controlling terminal), and node-pty's destroy
   * is deferred until the master has been silent for DrainQuietMs; then the descriptor is let go.
   * While reading is paused, silence means nothing: the wait (and its cap) starts over once it resumes.
   */
  private keepReadingAfterExit(): void {
    const internals = this.proc as unknown as { _socket?: { destroy(err?: Error): unknown; destroyed?: boolean }; _pty?: string };
    const socket = internals._socket;
    if (!socket || typeof socket.destroy !== 'function') return;
    if (process.platform === 'linux' && typeof internals._pty === 'string') {
      try {
        this.slaveFd = openSync(internals._pty, fsConstants.O_RDWR | fsConstants.O_NOCTTY);
      } catch {
        this.slaveFd = null;
      }
    }
    const destroy = socket.destroy.bind(socket);
    let since = 0;
    socket.destroy = (err?: Error) => {
      // No write may reach the descriptor once it is being let go (its number may be reused).
      this.writer?.close();
      if (socket.destroyed) return destroy(err);
      since ||= Date.now();
      const check = (): void => {
        if (socket.destroyed) return;
        if (this.paused) since = Date.now();
        else if (Date.now() - this.lastDataAt >= DrainQuietMs || Date.now() - since >= DrainMaxMs) {
          this.releaseSlave();
          destroy(err);
          return;
        }
        setTimeout(check, DrainQuietMs);
      };
      check();
      return socket;
    };
  }

  /** node-pty has closed the master (its socket is destroyed): the descriptor's number may be reused. */
  private masterReleased(): boolean {
    return (this.proc as unknown as { _socket?: { destroyed?: boolean } })._socket?.destroyed !== false;
  }

  private releaseSlave(): void {
    if (this.slaveFd === null) return;
    try {
      closeSync(this.slaveFd);
    } catch {
      // already closed
    }
    this.slaveFd = null;
  }

  get pid(): number {
    return this.proc.pid;
  }

  write(data: string | Uint8Array): void {
    if (this.exited) return;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data); // a copy: it may wait in the queue
    if (this.writer) this.writer.write(bytes);
    else this.proc.write(bytes);
  }

  resize(cols: number, rows: number): void {
    if (this.exited) return;
    try {
      this.proc.resize(cols, rows);
    } catch {
      // The pty closed between the check and the call; the exit event reports it.
    }
  }

  /**
   * One turn of the event loop: its poll phase reads whatever the PTY holds (libuv reads a readable
   * descriptor until it would block), and onData runs before the check phase resolves this.
   */
  drain(): Promise<void> {
    this.readNow();
    return new Promise((resolve) => setImmediate(resolve));
  }

  /**
   * What a program wrote may not be readable at the master yet: the kernel moves it there in a worker
   * (flush_to_ldisc), which epoll does not wait for, so the loop's poll can find nothing while the bytes
   * are on their way (a program that printed its question and blocked, seen blocked before the question
   * arrived). A read of the master waits for that work before it answers EAGAIN (n_tty_read flushes the
   * terminal's pending buffers first), so one read of our own takes everything written before it.
   * Delivered in order: node-pty's own stream has emitted all it read, and reads nothing in between.
   * After the exit too, until the master is let go (keepReadingAfterExit): a shell's last words come then.
   */
  readNow(): void {
    if (this.masterFd === null || this.paused || this.masterReleased()) return;
    // Listeners copy what they keep (onData), so the stream's buffer serves: no read of it is under way.
    const buf = sharedReadBuffer();
    for (let i = 0; i < ReadNowMaxReads; i++) {
      let n: number;
      try {
        n = readSync(this.masterFd, buf, 0, buf.length, null);
      } catch {
        return; // EAGAIN: nothing more; EIO: the slave side is gone
      }
      if (n <= 0) return;
      this.deliver(buf.subarray(0, n));
    }
  }

  private deliver(data: Buffer): void {
    this.lastDataAt = Date.now();
    for (const l of this.listeners) {
      try {
        l(data, 1);
      } catch (err) {
        reportSessionFailure('output', `pid ${this.proc.pid}`, err);
      }
    }
  }

  pause(): void {
    if (this.exited) return;
    this.paused = true;
    this.proc.pause();
  }

  resume(): void {
    if (this.exited) return;
    this.paused = false;
    // The drain after an exit must not take the time spent paused for silence before the first read.
    this.lastDataAt = Date.now();
    this.proc.resume();
  }

  kill(signal: NodeJS.Signals = 'SIGHUP'): void {
    // Input still waiting is for a program that is being ended: drop it now, quietly.
    this.writer?.close();
    if (this.exited) return;
    try {
      this.proc.kill(signal);
    } catch {
      // Already gone.
    }
  }

  /** `data` is lent for the call only (shared-read-buffer.ts): copy what you keep. */
  onData(listener: (data: Buffer, channel: number) => void): void {
    this.listeners.push(listener);
  }

  onExit(listener: (exit: ProcessExit) => void): void {
    this.proc.onExit(({ exitCode, signal }) => {
      this.exited = true;
      this.writer?.close();
      this.releaseSlave();
      try {
        listener({ exitCode: signal ? null : exitCode, signal: signal || null });
      } catch (err) {
        reportSessionFailure('exit', `pid ${this.proc.pid}`, err);
      }
    });
  }
}
