import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { childEnvironment } from '../shell-integration';

/**
 * ptydeck's own tmux server: its own socket (in ptydeck's home, never the user's default server) and
 * its own configuration file (so the user's ~/.tmux.conf is not read and ours changes nothing of theirs).
 * Every tmux command runs with the sanitized environment, because the tmux server hands its
 * environment to every pane: ptydeck's credentials must never be in it.
 */
// No global `window-size manual`: tmux 3.3a crashes creating a detached session with it. Each window is
// sized by new-session -x/-y and resize-window (which makes that window manual); control clients attach
// with ignore-size, so no client changes a size.
export const TMUX_CONF = [
  "# written by ptydeck; used only by ptydeck's own tmux server",
  'set -g status off',
  'setw -g remain-on-exit on',
  'set -g default-terminal xterm-256color',
  'set -g history-limit 10000',
  'set -g escape-time 0',
  'setw -g allow-rename off',
  'set -g destroy-unattached off',
  '',
].join('\n');

export class TmuxUnavailableError extends Error {
  constructor(detail: string) {
    super(`The tmux backend needs a working tmux binary: ${detail}`);
    this.name = 'TmuxUnavailableError';
  }
}

let availability: { ok: boolean; version: string; why: string } | null = null;

/** Whether a working tmux binary is on PATH (checked once). */
export function tmuxAvailability(): { ok: boolean; version: string; why: string } {
  if (availability) return availability;
  const r = spawnSync('tmux', ['-V'], { encoding: 'utf8', timeout: 5000 });
  availability =
    r.status === 0 ? { ok: true, version: r.stdout.trim(), why: '' } : { ok: false, version: '', why: r.error ? `${r.error.message}` : `tmux -V exited with ${r.status}` };
  return availability;
}

export class TmuxServer {
  readonly socket: string;
  readonly conf: string;
  readonly dir: string;
  private readonly env: Record<string, string>;
  private killed = false;

  constructor(home: string) {
    this.dir = join(home, 'tmux');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.socket = join(this.dir, 'server.sock');
    this.conf = join(this.dir, 'tmux.conf');
    writeFileSync(this.conf, TMUX_CONF, { mode: 0o600 });
    this.env = childEnvironment(process.env);
  }

  /** Runs one tmux command list synchronously (tmux answers in milliseconds); returns stdout. */
  run(args: string[]): string {
    if (this.killed) throw new Error('ptydeck\'s tmux server was ended');
    return execFileSync('tmux', ['-S', this.socket, '-f', this.conf, ...args], { env: this.env, encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /** Like run, but a failure (no such session, no server) is null instead of an exception. */
  tryRun(args: string[]): string | null {
    try {
      return this.run(args);
    } catch {
      return null;
    }
  }

  /** Spawn arguments for a long-lived control-mode client attached to `target`, for input and resizes. */
  controlClientArgs(target: string): { file: string; args: string[]; env: Record<string, string> } {
    return { file: 'tmux', args: ['-S', this.socket, '-f', this.conf, '-C', 'attach-session', '-t', target, '-f', 'no-output,ignore-size'], env: this.env };
  }

  /**
   * Ends ptydeck's tmux server and every session on it (nothing else can reach them once its home is gone).
   * Later commands fail at once instead of starting a tmux client that finds no server: ending many sessions
   * after this costs no process each.
   */
  kill(): void {
    this.tryRun(['kill-server']);
    this.killed = true;
  }

  /** Directory where a session's output segments go. */
  segmentDir(name: string): string {
    return join(this.dir, name);
  }
}
