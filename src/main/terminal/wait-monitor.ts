import { ScreenConstants, WaitMonitorConstants } from './constants';
import { kernelProbeAvailable, probeForeground, type ForegroundState } from './readiness';
import type { Session } from './session';

/**
 * Keeps each session's `waitingForInput` (and the prompt line it waits on) current for the viewer:
 * the program in the foreground asks the person something. That is more than "blocked reading the
 * terminal" (readiness.ts), which a full-screen program is between two redraws:
 *
 *   1. the foreground group's thread waits on the terminal, seen on two looks with no output between
 *      (a program may print its question and block before this process has read the bytes);
 *   2. the program does not redraw by itself: one that printed while it was settled in such a wait,
 *      with no one typing, is running interactively (top, htop), not asking, for SelfRedrawMemoryMs
 *      after it last did;
 *   3. a wait with a timeout (the way such programs wait) counts only once it has lasted TimedWaitHoldMs;
 *   4. the verdict must hold for HoldMs before the session shows it, in either direction, so a tab does
 *      not flap (and notify) with every turn of a program's loop.
 *
 * A command that ends clears the state at once: the shell at its prompt is never "waiting".
 */
interface Watch {
  /** The foreground group this was about: a new program starts afresh. */
  pgid: number;
  /** When the current unbroken wait was first seen. */
  waitSince: number | null;
  /** The last look that saw a wait: the log's end then, when, and whether the look before saw it too with no output between. */
  lastWait: { logEnd: number; at: number; settled: boolean } | null;
  /** When the program last printed on its own while it was reading. */
  selfRedrawAt: number;
  /** The verdict of the last look, and since when it has held. */
  asking: boolean;
  askingSince: number;
  /** The log's end when the shown prompt line was read (read again when the screen changed). */
  promptAt: number;
  reading: boolean;
}

export class WaitMonitor {
  private readonly watches = new WeakMap<Session, Watch>();

  /** One look at every session (the manager calls this every IntervalMs). */
  tick(sessions: Iterable<Session>, now = Date.now()): void {
    for (const s of sessions) this.look(s, now);
  }

  private look(s: Session, now: number): void {
    if (!s.isAlive || s.mode !== 'pty' || s.shellState !== 'busy' || !kernelProbeAvailable) {
      this.watches.delete(s);
      s.setWaitingForInput(false);
      return;
    }
    if (now - s.lastOutputAt < WaitMonitorConstants.SettleMs) return;
    const fg = probeForeground(s.pid!);
    let w = this.watches.get(s);
    if (!w || (fg && fg.pgid !== w.pgid)) {
      w = { pgid: fg?.pgid ?? -1, waitSince: null, lastWait: null, selfRedrawAt: -Infinity, asking: false, askingSince: now, promptAt: -1, reading: false };
      this.watches.set(s, w);
    }
    const verdict = this.asks(s, w, fg, now);
    if (verdict !== w.asking) {
      w.asking = verdict;
      w.askingSince = now;
    }
    if (now - w.askingSince < WaitMonitorConstants.HoldMs) return;
    if (!w.asking) {
      s.setWaitingForInput(false);
      return;
    }
    // Shown (or about to be): read the line it waits on, again whenever the screen has changed.
    if (w.reading || (s.waitingForInput && w.promptAt === s.log.end)) return;
    w.reading = true;
    const at = s.log.end;
    void s.screen
      .promptLine(ScreenConstants.PromptMaxChars)
      .catch(() => null)
      .then((prompt) => {
        w.reading = false;
        if (this.watches.get(s) !== w || !w.asking || !s.isAlive) return;
        w.promptAt = at;
        s.setWaitingForInput(true, prompt);
      });
  }

  private asks(s: Session, w: Watch, fg: ForegroundState | null, now: number): boolean {
    const waiting = fg?.threads.filter((t) => t.waitingOnTerminal) ?? [];
    if (waiting.length === 0) {
      w.waitSince = null;
      return false;
    }
    const grew = w.lastWait !== null && s.log.end > w.lastWait.logEnd;
    // It printed after it had settled in its wait, and nobody typed in between: it redraws by itself.
    // (Output right after the first look may be the question itself, still on its way to us.)
    if (grew && w.lastWait!.settled && s.lastInputAt <= w.lastWait!.at) w.selfRedrawAt = now;
    // Output that echoes what someone typed keeps the wait settled: it is the answer being typed.
    const settled = w.lastWait !== null && (!grew || s.lastInputAt > w.lastWait.at);
    w.lastWait = { logEnd: s.log.end, at: now, settled };
    w.waitSince ??= now;
    if (!settled || now - w.selfRedrawAt < WaitMonitorConstants.SelfRedrawMemoryMs) return false;
    const timed = waiting.every((t) => t.waitTimed);
    return !timed || now - w.waitSince >= WaitMonitorConstants.TimedWaitHoldMs;
  }
}
