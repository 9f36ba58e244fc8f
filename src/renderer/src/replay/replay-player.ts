import { Terminal } from '@xterm/xterm';
import { Unicode11Addon } from '@xterm/addon-unicode11';
import { attachRenderer } from '../terminal/renderer-choice';
import { terminalFont, terminalTheme } from '../terminal/theme';
import { parseSize, type Cast } from './cast';

/**
 * Plays a recording in xterm.js: the same emulator, theme and renderer as the live tab, so a replay
 * looks exactly as the terminal did. Seeking rebuilds the screen from the start of the recording up to
 * that moment (xterm parses ~50 MiB/s, so even a long recording seeks in a second or two); playing
 * writes each event when the clock reaches it, at any speed.
 *
 * It takes no input: a replay is read-only, and the terminal's answers to queries are dropped.
 */
export interface PlayerState {
  time: number;
  duration: number;
  playing: boolean;
  speed: number;
}

export const ReplayConstants = {
  /** A frame's worth of events is written at once while playing. */
  FrameMs: 16,
  /** The longest real pause replayed; longer idle stretches are cut to this (as asciinema's idle_time_limit). */
  IdleLimitSecs: 3,
} as const;

export class ReplayPlayer {
  readonly term: Terminal;
  private cast: Cast;
  /** Index of the next event to apply. */
  private next = 0;
  private clock = 0;
  private playing = false;
  private speed = 1;
  private frame: number | null = null;
  private lastTick = 0;
  private disposed = false;
  /** Counts seeks, so an older one that is still waiting gives way to the newest. */
  private seeks = 0;

  constructor(
    host: HTMLElement,
    cast: Cast,
    private readonly onState: (s: PlayerState) => void,
  ) {
    this.cast = cast;
    this.term = new Terminal({
      ...terminalFont,
      theme: terminalTheme,
      allowProposedApi: true,
      cols: cast.header.width,
      rows: cast.header.height,
      scrollback: 5000,
      disableStdin: true,
      cursorBlink: false,
      drawBoldTextInBrightColors: false,
      minimumContrastRatio: 1,
    });
    this.term.loadAddon(new Unicode11Addon());
    this.term.unicode.activeVersion = '11';
    this.term.open(host);
    attachRenderer(this.term, () => undefined);
    this.emit();
  }

  get state(): PlayerState {
    return { time: this.clock, duration: this.cast.duration, playing: this.playing, speed: this.speed };
  }

  /** A newer copy of the same recording (a live session went on): keeps the position. */
  update(cast: Cast): void {
    const at = this.clock;
    this.cast = cast;
    void this.seek(at);
  }

  /** Shows the screen as it was at `t` seconds: every event up to and including that moment. */
  async seek(t: number): Promise<void> {
    const target = Math.min(Math.max(0, t), this.cast.duration);
    const mine = ++this.seeks;
    // Writes still queued in xterm would land after the reset: let them finish first.
    await new Promise<void>((resolve) => this.term.write('', resolve));
    if (mine !== this.seeks || this.disposed) return;
    this.term.reset();
    this.resize(this.cast.header.width, this.cast.header.height);
    this.next = 0;
    this.clock = target;
    const done = this.applyUntil(target);
    this.emit();
    await done;
  }

  play(): void {
    if (this.playing || this.disposed) return;
    if (this.clock >= this.cast.duration) void this.seek(0);
    this.playing = true;
    this.lastTick = performance.now();
    this.frame = requestAnimationFrame(this.tick);
    this.emit();
  }

  pause(): void {
    this.playing = false;
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
    this.emit();
  }

  setSpeed(speed: number): void {
    this.speed = speed;
    this.emit();
  }

  dispose(): void {
    this.disposed = true;
    this.pause();
    this.term.dispose();
  }

  private readonly tick = (now: number): void => {
    if (!this.playing || this.disposed) return;
    const dt = Math.min((now - this.lastTick) / 1000, ReplayConstants.IdleLimitSecs);
    this.lastTick = now;
    let target = this.clock + dt * this.speed;
    // Skip long idle stretches: jump to just before the next event.
    const upcoming = this.cast.events[this.next];
    if (upcoming && upcoming.t - this.clock > ReplayConstants.IdleLimitSecs) target = Math.max(target, upcoming.t - ReplayConstants.IdleLimitSecs / 2);
    this.clock = Math.min(target, this.cast.duration);
    void this.applyUntil(this.clock);
    if (this.clock >= this.cast.duration) {
      this.playing = false;
      this.frame = null;
    } else this.frame = requestAnimationFrame(this.tick);
    this.emit();
  };

  /** Writes the events up to `t` as few writes as possible; resolves once xterm has parsed them. */
  private applyUntil(t: number): Promise<void> {
    const events = this.cast.events;
    let text = '';
    const flush = (): void => {
      if (text) this.term.write(text);
      text = '';
    };
    while (this.next < events.length && events[this.next].t <= t) {
      const e = events[this.next++];
      if (e.code === 'o') text += e.data;
      else if (e.code === 'r') {
        const size = parseSize(e.data);
        if (size) {
          flush();
          this.resize(size.cols, size.rows);
        }
      }
    }
    return new Promise((resolve) => {
      if (text) this.term.write(text, resolve);
      else this.term.write('', resolve);
    });
  }

  private resize(cols: number, rows: number): void {
    if (cols !== this.term.cols || rows !== this.term.rows) this.term.resize(Math.max(1, Math.min(cols, 1000)), Math.max(1, Math.min(rows, 500)));
  }

  private emit(): void {
    this.onState(this.state);
  }
}
