import * as pty from 'node-pty';
import type { Backend, ProcessExit, SpawnSpec, TerminalProcess } from './backend';

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

class NodePtyProcess implements TerminalProcess {
  readonly isTty = true;
  private exited = false;

  constructor(private readonly proc: pty.IPty) {}

  get pid(): number {
    return this.proc.pid;
  }

  write(data: string | Uint8Array): void {
    if (this.exited) return;
    this.proc.write(typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }

  resize(cols: number, rows: number): void {
    if (this.exited) return;
    try {
      this.proc.resize(cols, rows);
    } catch {
      // The pty closed between the check and the call; the exit event reports it.
    }
  }

  kill(signal: NodeJS.Signals = 'SIGHUP'): void {
    if (this.exited) return;
    try {
      this.proc.kill(signal);
    } catch {
      // Already gone.
    }
  }

  onData(listener: (data: Buffer, channel: number) => void): void {
    // With `encoding: null` node-pty hands out Buffers, whatever its typings say.
    this.proc.onData((d: string | Buffer) => listener(typeof d === 'string' ? Buffer.from(d, 'utf8') : d, 1));
  }

  onExit(listener: (exit: ProcessExit) => void): void {
    this.proc.onExit(({ exitCode, signal }) => {
      this.exited = true;
      listener({ exitCode: signal ? null : exitCode, signal: signal || null });
    });
  }
}
