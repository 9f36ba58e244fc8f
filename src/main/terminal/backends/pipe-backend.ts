import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Backend, ProcessExit, SpawnSpec, TerminalProcess } from './backend';

/**
 * A shell on plain pipes (execd's `pty=0`): stdout and stderr stay apart and nothing thinks it has a
 * terminal. The child leads its own process group so that signals reach everything it started.
 */
export class PipeBackend implements Backend {
  readonly kind = 'pipe' as const;

  spawn(spec: SpawnSpec): TerminalProcess {
    const child = spawn(spec.file, spec.args, { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    return new PipeProcess(child);
  }
}

class PipeProcess implements TerminalProcess {
  readonly isTty = false;
  private readonly dataListeners: ((data: Buffer, channel: number) => void)[] = [];
  private exitListeners: ((exit: ProcessExit) => void)[] = [];
  private exit: ProcessExit | null = null;

  constructor(private readonly child: ChildProcess) {
    child.stdout!.on('data', (d: Buffer) => this.dataListeners.forEach((l) => l(d, 1)));
    child.stderr!.on('data', (d: Buffer) => this.dataListeners.forEach((l) => l(d, 2)));
    child.stdin!.on('error', () => {
      // EPIPE after the shell exits; the close event reports the exit.
    });
    child.on('error', () => this.finish({ exitCode: null, signal: null }));
    // 'close' (not 'exit') waits for stdout and stderr to end, so no output comes after the exit report.
    child.on('close', (code, signal) => this.finish({ exitCode: signal ? null : code, signal: signal ? signalNumber(signal) : null }));
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  get pendingInputBytes(): number {
    return this.child.stdin?.writableLength ?? 0;
  }

  write(data: string | Uint8Array): void {
    if (this.exit || !this.child.stdin?.writable) return;
    this.child.stdin.write(data);
  }

  resize(): void {
    // No terminal, no size.
  }

  kill(signal: NodeJS.Signals = 'SIGHUP'): void {
    if (this.exit) return;
    try {
      this.child.kill(signal);
    } catch {
      // Already gone.
    }
  }

  onData(listener: (data: Buffer, channel: number) => void): void {
    this.dataListeners.push(listener);
  }

  onExit(listener: (exit: ProcessExit) => void): void {
    if (this.exit) listener(this.exit);
    else this.exitListeners.push(listener);
  }

  private finish(exit: ProcessExit): void {
    if (this.exit) return;
    this.exit = exit;
    const listeners = this.exitListeners;
    this.exitListeners = [];
    listeners.forEach((l) => l(exit));
  }
}

function signalNumber(name: NodeJS.Signals): number {
  return constants.signals[name] ?? 0;
}
