import { execFileSync } from 'node:child_process';
import { lineModes as nativeLineModes } from 'ptydeck-tty-modes';
import { terminalOf } from '../terminal/processes';

/**
 * Is the terminal taking a secret right now? A password prompt (`read -s`, sudo, ssh, getpass) turns
 * ECHO off and leaves the line discipline canonical (ICANON on): the kernel collects the line, shows
 * nothing. That state, read from the terminal itself, is the test; the prompt's text is never looked at.
 *
 * ECHO off alone is not enough: readline (bash's prompt), vim and every full-screen program turn both
 * ECHO and ICANON off and draw the keys themselves, so their input is visible on screen and recorded.
 *
 * The terminal is found from the shell's pid (its stdin, /proc/<pid>/fd/0, is the PTY's slave side),
 * so it works whoever holds the PTY's master: node-pty in this process, tmux, or a separate PTY host.
 * The flags are read with one tcgetattr through a small native helper (native/tty-modes, ~9 µs); where
 * it could not be built, `stty -F` is run instead (~18 ms a call, so only as a fallback).
 */
export type LineModes = { echo: boolean; canonical: boolean };

const MODE_ECHO = 1;
const MODE_CANONICAL = 2;

let warnedFallback = false;

function readModes(tty: string): LineModes | null {
  if (nativeLineModes) {
    const v = nativeLineModes(tty);
    return v < 0 ? null : { echo: (v & MODE_ECHO) !== 0, canonical: (v & MODE_CANONICAL) !== 0 };
  }
  if (!warnedFallback) {
    warnedFallback = true;
    console.warn('ptydeck: the tty-modes helper is not built; telling hidden input with stty (slower)');
  }
  try {
    const out = execFileSync('stty', [process.platform === 'darwin' ? '-f' : '-F', tty, '-a'], { encoding: 'utf8', timeout: 2000, stdio: ['ignore', 'pipe', 'ignore'] });
    return { echo: /(^|\s)echo(\s|$)/.test(out), canonical: /(^|\s)icanon(\s|$)/.test(out) };
  } catch {
    return null;
  }
}

/** Follows one session's terminal; the path is looked up once per shell. */
export class SecretPromptProbe {
  private pid: number | null = null;
  private tty: string | null = null;

  /** True when input arriving now would go to a prompt that does not echo it. Unknown is false. */
  isHidden(shellPid: number | null): boolean {
    if (!shellPid) return false;
    if (shellPid !== this.pid) {
      this.pid = shellPid;
      this.tty = terminalOf(shellPid);
    }
    if (!this.tty) return false;
    const modes = readModes(this.tty);
    return modes !== null && !modes.echo && modes.canonical;
  }
}
