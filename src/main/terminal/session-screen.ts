import { noteOutputAnywhere, ScreenMirror, type QueryAnswerSink } from './screen';
import type { OutputLog } from './output-log';

/**
 * A session's headless screen over the session's life. The screen is most of what a session costs in
 * memory (a full scrollback is ~12 MiB at 120 columns), and nearly all of it is only worth keeping
 * while someone looks: so it is made on first use, parsed ahead of time (the idle catch-up) only while
 * a person's tab shows it, and dropped once nobody has used it for a while or the memory budget needs
 * the room. The next use makes it again from the log.
 */
export interface ScreenOwner {
  readonly log: OutputLog;
  /** The terminal's size at the log's start, and each resize after it at its offset. */
  sizes(): { first: { cols: number; rows: number }; after: { offset: number; cols: number; rows: number }[] };
  /** Where the screen's answers to terminal queries go (null: something else answers, or no PTY). */
  answerSink(): QueryAnswerSink | null;
  readonly scrollbackLines: number;
  /** A person's tab shows the session: parse ahead, so its next snapshot is cheap, and keep the screen. */
  watched(): boolean;
  /** Someone holds a place in the screen (a send's cursor marker): dropping it would lose that place. */
  holding(): boolean;
  /** The screen grew by this much (the memory budget acts on it as on log growth). */
  grew(bytes: number): void;
}

export class SessionScreen {
  private mirror: ScreenMirror | null = null;
  private lastUsedAt = 0;
  /** Terminal queries up to here were answered by a screen since dropped (its successor stays silent on them). */
  private answeredTo = 0;

  constructor(private readonly owner: ScreenOwner) {}

  /** The screen, made now if there is none; every call counts as a use. */
  get(): ScreenMirror {
    this.lastUsedAt = Date.now();
    if (!this.mirror) {
      const { first, after } = this.owner.sizes();
      const log = this.owner.log;
      const mirror = new ScreenMirror(log, first.cols, first.rows, this.owner.scrollbackLines, this.owner.answerSink(), this.answeredTo, (bytes) => this.owner.grew(bytes));
      for (const r of after) if (r.offset > log.start) mirror.noteResize(r.cols, r.rows, r.offset);
      this.mirror = mirror;
    }
    return this.mirror;
  }

  get built(): boolean {
    return this.mirror !== null;
  }

  /** Memory of the screen, 0 when there is none. */
  get bytes(): number {
    return this.mirror?.estimatedBytes() ?? 0;
  }

  /**
   * Output arrived. Only a watched screen parses it ahead of time; any other parses when next asked. Either
   * way it counts as output anywhere, which watched screens' catch-ups wait out (screen.ts).
   */
  noteOutput(): void {
    if (this.mirror && this.owner.watched()) this.mirror.noteOutput();
    else noteOutputAnywhere();
  }

  noteResize(cols: number, rows: number): void {
    this.mirror?.noteResize(cols, rows);
  }

  /**
   * Drops the screen unless it is watched or held, is being parsed for someone, or was used less than
   * `unusedForMs` ago. Returns the bytes freed.
   */
  drop(unusedForMs = 0, now = Date.now()): number {
    const mirror = this.mirror;
    if (!mirror || mirror.busy || this.owner.watched() || this.owner.holding() || now - this.lastUsedAt < unusedForMs) return 0;
    const bytes = mirror.estimatedBytes();
    this.answeredTo = Math.max(this.answeredTo, mirror.parsedOffset);
    mirror.dispose();
    this.mirror = null;
    return bytes;
  }

  /** Throws the screen away without noting its answers (it could not answer: the terminal changed under it). */
  discard(): void {
    this.mirror?.dispose();
    this.mirror = null;
  }
}
