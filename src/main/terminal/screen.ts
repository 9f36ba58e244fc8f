import * as headlessModule from '@xterm/headless';
import * as serializeModule from '@xterm/addon-serialize';
import type { Terminal as HeadlessTerminal } from '@xterm/headless';
import type { SerializeAddon as SerializeAddonType } from '@xterm/addon-serialize';
import type { GlanceRun } from '../../shared/types';
import { QueryAnswerConstants, ScreenConstants } from './constants';
import type { OutputLog } from './output-log';

/**
 * Both packages are CommonJS. Loaders disagree on what importing one gives: Node's ESM and vitest put
 * module.exports under `default`, the bundle and Playwright's transform give the exports themselves.
 * Taking `default` when there is one works under all of them.
 */
const cjs = <T>(ns: unknown): T => ((ns as { default?: T }).default ?? ns) as T;
const { Terminal } = cjs<{ Terminal: typeof HeadlessTerminal }>(headlessModule);
const { SerializeAddon } = cjs<{ SerializeAddon: typeof SerializeAddonType }>(serializeModule);

/**
 * Screens that may be parsing at once, in the whole process. Parsing is CPU-bound on this one thread,
 * so running many at once finishes none sooner; it only holds many half-built screens at the same time
 * (fifty sockets attaching together were fifty 12 MiB screens, 600 MiB, before the first was done and
 * could be let go). One at a time, each is done, used and released before the next grows.
 */
class ParseSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(slots: number) {
    this.free = slots;
  }

  /** Resolves with the function that gives the slot back. */
  take(): Promise<() => void> {
    return new Promise((resolve) => {
      let given = false;
      const give = (): void => {
        if (given) return;
        given = true;
        const next = this.waiting.shift();
        if (next) next();
        else this.free++;
      };
      if (this.free > 0) {
        this.free--;
        resolve(give);
      } else this.waiting.push(() => resolve(give));
    });
  }
}

const parseSlots = new ParseSlots(ScreenConstants.ParsingAtOnce);

/** Where the answers to terminal queries go (the PTY), and whether it is taking input at the moment. */
export interface QueryAnswerSink {
  write(reply: string): void;
  /** False while earlier input still waits for the program to read it: then answers are dropped. */
  draining(): boolean;
}

export interface ScreenSnapshot {
  /** Escape sequences that repaint the screen (and scrollback) on an empty terminal of this size. */
  data: string;
  cols: number;
  rows: number;
  /** The log offset this snapshot reflects: live output from here on continues it exactly. */
  offset: number;
  /** True when the log had dropped unparsed bytes, so the screen was rebuilt from what remained. */
  rebuilt: boolean;
}

/** When any session of this process last printed, watched or not (see ScreenMirror.noteOutput). */
let lastOutputAnywhere = 0;

/** Some session printed: screens waiting to catch up on their own wait while any session prints. */
export function noteOutputAnywhere(now: number = Date.now()): void {
  lastOutputAnywhere = now;
}

/**
 * The session's screen as a terminal would show it: a headless xterm fed from the output log.
 *
 * It is kept off the hot path on purpose (parsing costs about as much as reading the PTY): bytes are
 * parsed when someone asks for the screen, when output has gone quiet, or at once when a program asks
 * the terminal a question (cursor position, device attributes) that it waits to have answered. If the
 * log dropped bytes that were never parsed, or far more is left to parse than the screen and its
 * scrollback can show, the screen is rebuilt from the log's tail (rebuildStart).
 *
 * Resizes are recorded at the log offset where they happened and applied there during catch-up, so
 * lazily parsed output still wraps at the width it was printed at.
 */
export class ScreenMirror {
  private readonly term: HeadlessTerminal;
  private readonly serializer: SerializeAddonType;
  private parsed: number;
  private readonly pendingResizes: { offset: number; cols: number; rows: number }[] = [];
  private chain: Promise<void> = Promise.resolve();
  /** A catch-up that is queued but has not started: it will parse up to wherever the log ends then. */
  private queued: Promise<void> | null = null;
  private answering = false;
  /** Answers produced while parsing the current step, written together once it is parsed. */
  private replies: string[] = [];
  private replyBytes = 0;
  private readonly answerBudget = new ByteBudget(QueryAnswerConstants.BytesPerSecond);
  /** The last catch-up rebuilt the screen from the log's tail (a snapshot says so, once). */
  private lastRebuilt = false;
  /** Queries before this offset are not answered: a dropped screen before this one answered them, or a rebuild skipped them. */
  private answerAfter: number;
  /** Where the newest query the output scanner saw starts, and when it came. */
  private lastQuery: { at: number; time: number } | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private lastOutputAt = 0;
  private disposed = false;
  /** Resolves when the screen is disposed: a parse step in flight then stops waiting for a terminal that is gone. */
  private readonly gone: Promise<void>;
  private markGone!: () => void;
  /** Catch-ups someone waits for: while any is queued, steps are large. */
  private urgent = 0;
  private parsing = false;
  /** Gives back this screen's parse slot while it holds one. */
  private slot: (() => void) | null = null;
  /** The estimate last reported to `onGrowth`. */
  private reportedBytes = 0;
  /** Parses bytes before returning (see SyncParseMaxBytes), or null where xterm no longer offers it. */
  private readonly writeSync: ((data: Uint8Array) => void) | null;

  constructor(
    private readonly log: OutputLog,
    cols: number,
    rows: number,
    scrollback: number = ScreenConstants.DefaultScrollbackLines,
    /** Where the answers to terminal queries go (the PTY), or null when something else answers them (tmux). */
    private readonly answer: QueryAnswerSink | null = null,
    /** Queries before this offset were answered by an earlier screen (this one replaces a dropped one). */
    answerFrom = 0,
    /** Told when parsing made the screen larger (by how much), so the memory budget can act in time. */
    private readonly onGrowth: ((bytes: number) => void) | null = null,
  ) {
    this.answerAfter = answerFrom;
    this.gone = new Promise((resolve) => (this.markGone = resolve));
    // logLevel: writeSync warns once that it is "unreliable": it cannot wait for asynchronous parser
    // handlers, and this terminal registers none.
    this.term = new Terminal({ cols, rows, scrollback, allowProposedApi: true, logLevel: 'error' });
    this.writeSync = syncWriter(this.term);
    this.serializer = new SerializeAddon();
    this.term.loadAddon(this.serializer);
    this.parsed = log.start;
    this.term.onData((reply) => {
      if (!this.answering || !this.answer) return;
      // Coalesced per step and capped: a flood of queries in one step yields one bounded answer.
      if (this.replyBytes + reply.length > QueryAnswerConstants.MaxBytesPerChunk) return;
      this.replies.push(reply);
      this.replyBytes += reply.length;
    });
  }

  get cols(): number {
    return this.term.cols;
  }

  get rows(): number {
    return this.term.rows;
  }

  /** Bytes of the log not yet parsed. */
  get lag(): number {
    return this.log.end - this.parsed;
  }

  /** The log offset parsed so far. */
  get parsedOffset(): number {
    return this.parsed;
  }

  /** A catch-up runs or is waited for: disposing the screen now would pull it from under its caller. */
  get busy(): boolean {
    return this.parsing || this.queued !== null || this.urgent > 0;
  }

  /** Roughly what the headless buffers hold in memory (lines of scrollback and screen, with their overhead). */
  estimatedBytes(): number {
    const lines = this.term.buffer.normal.length + (this.term.buffer.active.type === 'alternate' ? this.term.rows : 0);
    return lines * (this.term.cols * ScreenConstants.BytesPerCell + ScreenConstants.BytesPerLine);
  }

  /**
   * Called on each batch of output: schedules the idle catch-up without touching the bytes. It waits for
   * this session to go quiet, and while other sessions still print, for them too (up to
   * IdleCatchUpMaxDeferMs of this one's quiet): many sessions streaming at once pause in turn, and
   * parsing each one in its pauses would parse everything they print, on the thread that serves them.
   */
  noteOutput(): void {
    const now = Date.now();
    this.lastOutputAt = now;
    noteOutputAnywhere(now);
    if (this.idleTimer || this.disposed) return;
    const tick = (): void => {
      const at = Date.now();
      const quietFor = at - this.lastOutputAt;
      const othersQuietFor = at - lastOutputAnywhere;
      if (quietFor < ScreenConstants.IdleCatchUpMs) {
        this.idleTimer = setTimeout(tick, ScreenConstants.IdleCatchUpMs - quietFor);
        return;
      }
      if (othersQuietFor < ScreenConstants.IdleCatchUpMs && quietFor < ScreenConstants.IdleCatchUpMaxDeferMs) {
        this.idleTimer = setTimeout(tick, ScreenConstants.IdleCatchUpMs - othersQuietFor);
        return;
      }
      this.idleTimer = null;
      void this.catchUp({ idle: true });
    };
    this.idleTimer = setTimeout(tick, ScreenConstants.IdleCatchUpMs);
  }

  /** A program asked the terminal something (the query starts at `at`): parse now so the headless terminal answers it. */
  noteQuery(at: number = this.log.end): void {
    this.lastQuery = { at, time: Date.now() };
    // One urgent catch-up already queued will parse this query too: a query in every chunk adds nothing.
    if (this.queued && this.urgent > 0) return;
    void this.catchUp();
  }

  /** The terminal took this size at this log offset (by default: now). */
  noteResize(cols: number, rows: number, offset: number = this.log.end): void {
    this.pendingResizes.push({ offset, cols, rows });
  }

  /**
   * Parses everything the log holds up to now. Calls are serialized; each resolves once its bytes are in.
   * An idle catch-up (nobody waits for it) parses in small steps and yields between them. Calls made
   * while one is already queued share it (it starts later, so it parses at least as far): a program that
   * prints a query in every chunk queues one catch-up, not one per chunk.
   */
  catchUp(opts: { idle?: boolean } = {}): Promise<void> {
    if (!opts.idle) this.urgent++;
    const done = (): void => {
      if (!opts.idle) this.urgent--;
    };
    if (this.queued) return this.queued.finally(done);
    const run = async (): Promise<void> => {
      this.slot = await parseSlots.take();
      this.queued = null;
      this.parsing = true;
      try {
        if (!this.disposed) await parse();
      } finally {
        this.parsing = false;
        this.slot?.();
        this.slot = null;
        this.reportGrowth();
      }
    };
    const parse = async (): Promise<void> => {
      const target = this.log.end;
      // Nobody waits for an idle catch-up: it only readies a later look, so it never parses more than a
      // rebuild from the tail would (a session that printed megabytes between its pauses costs one tail).
      const rebuildAbove = this.urgent > 0 ? ScreenConstants.RebuildAboveBytes : ScreenConstants.IdleRebuildAboveBytes;
      if (this.parsed < this.log.start || target - this.parsed > rebuildAbove) {
        // Bytes we never parsed are gone, or too many to be worth it: start over from the log's last
        // RebuildTailBytes, at a line start, answering no old query.
        this.term.reset();
        this.parsed = this.rebuildStart(target);
        this.lastRebuilt = true;
        const q = this.lastQuery;
        const waitedFor = q !== null && q.at >= this.parsed && q.at < target && Date.now() - q.time < ScreenConstants.RecentQueryMs;
        this.answerAfter = Math.max(this.answerAfter, waitedFor ? q.at : target);
        while (this.pendingResizes.length && this.pendingResizes[0].offset <= this.parsed) {
          const r = this.pendingResizes.shift()!;
          this.term.resize(r.cols, r.rows);
        }
      }
      try {
        while (this.parsed < target) {
          if (this.disposed) return;
          const nextResize = this.pendingResizes[0];
          const step = this.urgent > 0 ? ScreenConstants.CatchUpChunkBytes : ScreenConstants.IdleCatchUpSliceBytes;
          // Queries before answerAfter are not answered: parse up to it silently, then answer.
          const silentUntil = this.parsed < this.answerAfter ? this.answerAfter : Infinity;
          const stop = Math.min(target, this.parsed + step, nextResize ? nextResize.offset : Infinity, silentUntil);
          this.answering = this.answer !== null && this.parsed >= this.answerAfter;
          if (stop > this.parsed) {
            const bytes = this.log.read(this.parsed, stop);
            if (bytes.length <= ScreenConstants.SyncParseMaxBytes && this.writeSync) this.writeSync(bytes);
            else await Promise.race([new Promise<void>((resolve) => this.term.write(bytes, resolve)), this.gone]);
            if (this.disposed) return;
            this.parsed = stop;
            this.sendReplies();
            this.reportGrowth();
            // Nobody waits: let I/O (an exec, a keystroke) and other screens' catch-ups in between steps.
            if (this.urgent === 0 && this.parsed < target) {
              this.slot?.();
              this.slot = null;
              await new Promise((r) => setImmediate(r));
              this.slot = await parseSlots.take();
            }
          }
          while (this.pendingResizes.length && this.pendingResizes[0].offset <= this.parsed) {
            const r = this.pendingResizes.shift()!;
            this.term.resize(r.cols, r.rows);
          }
        }
        while (this.pendingResizes.length && this.pendingResizes[0].offset <= this.parsed) {
          const r = this.pendingResizes.shift()!;
          this.term.resize(r.cols, r.rows);
        }
      } finally {
        this.answering = false;
        this.replies = [];
        this.replyBytes = 0;
      }
    };
    const queued = this.chain.then(run, run);
    this.queued = queued;
    this.chain = queued.finally(done);
    return this.chain;
  }

  private reportGrowth(): void {
    if (!this.onGrowth || this.disposed) return;
    const now = this.estimatedBytes();
    if (now > this.reportedBytes) this.onGrowth(now - this.reportedBytes);
    this.reportedBytes = now;
  }

  /**
   * Writes the step's answers as one write, unless the program is not reading its input (the answers
   * would only pile up behind what waits) or the session has spent its answer budget for now.
   */
  private sendReplies(): void {
    if (!this.replies.length) return;
    const reply = this.replies.join('');
    this.replies = [];
    this.replyBytes = 0;
    if (this.disposed || !this.answer || !this.answer.draining() || !this.answerBudget.take(reply.length)) return;
    this.answer.write(reply);
  }

  /**
   * Where a rebuild starts parsing: at a line start, no further back than RebuildTailBytes, nor than the
   * lines the screen and its scrollback can hold (a flood of short lines needs kilobytes, not a
   * megabyte: parsing that tail cost the thread a few hundred milliseconds).
   */
  private rebuildStart(target: number): number {
    const from = Math.max(this.log.start, target - ScreenConstants.RebuildTailBytes);
    const rows = this.pendingResizes.reduce((most, r) => Math.max(most, r.rows), this.term.rows);
    const lines = this.log.lineStartBefore(target, rows + (this.term.options.scrollback ?? ScreenConstants.DefaultScrollbackLines), from);
    if (lines !== null) return lines;
    if (from === this.log.start) return from;
    const nl = this.log.indexOf(Buffer.from('\n'), from, Math.min(target, from + 64 * 1024));
    return nl < 0 ? from : nl + 1;
  }

  async snapshot(scrollback: number = ScreenConstants.DefaultScrollbackLines): Promise<ScreenSnapshot> {
    await this.catchUp();
    const rebuilt = this.lastRebuilt;
    this.lastRebuilt = false;
    return { data: this.serializer.serialize({ scrollback }), cols: this.term.cols, rows: this.term.rows, offset: this.parsed, rebuilt };
  }

  /**
   * Every line the normal buffer holds (scrollback, then the screen down to the cursor), wrapped rows
   * joined into one line each, for paging by line.
   */
  async allLines(): Promise<string[]> {
    await this.catchUp();
    const buf = this.term.buffer.normal;
    const last = buf.baseY + buf.cursorY;
    const lines: string[] = [];
    for (let y = 0; y <= last; y++) {
      const line = buf.getLine(y);
      if (!line) continue;
      const text = line.translateToString(true);
      if (line.isWrapped && lines.length) lines[lines.length - 1] += text;
      else lines.push(text);
    }
    return lines;
  }

  /** Marks the cursor's line now (after catching up); the marker follows the line as the buffer scrolls. */
  async markCursor(): Promise<{ line: number; isDisposed: boolean; dispose(): void } | null> {
    await this.catchUp();
    return this.term.registerMarker(0) ?? null;
  }

  /**
   * What the screen shows that is new since `marker`, as a person would read it: from the marked line
   * to the cursor's line (a `\r` progress bar is one line in its last state). A full-screen program
   * (the alternate buffer) shows its whole screen. Capped at `maxBytes`, keeping the newest lines.
   */
  async viewportSince(marker: { line: number; isDisposed: boolean } | null, maxBytes: number): Promise<{ text: string; truncated: boolean; fullScreen: boolean }> {
    await this.catchUp();
    const buf = this.term.buffer.active;
    const fullScreen = buf.type === 'alternate';
    let from: number;
    let truncated = false;
    if (fullScreen) from = buf.viewportY;
    else if (!marker || marker.isDisposed || marker.line < 0) {
      // The marked line scrolled out of the scrollback: what is left is shown, and said to be cut.
      from = 0;
      truncated = true;
    } else from = marker.line;
    const last = fullScreen ? buf.viewportY + this.term.rows - 1 : buf.baseY + buf.cursorY;
    const lines: string[] = [];
    for (let y = from; y <= last; y++) {
      const line = buf.getLine(y);
      if (!line) continue;
      const text = line.translateToString(true);
      if (line.isWrapped && lines.length) lines[lines.length - 1] += text;
      else lines.push(text);
    }
    while (lines.length && lines[lines.length - 1] === '') lines.pop();
    let text = lines.join('\n');
    if (Buffer.byteLength(text) > maxBytes) {
      const bytes = Buffer.from(text, 'utf8');
      let cut = bytes.length - maxBytes;
      while (cut < bytes.length && (bytes[cut] & 0xc0) === 0x80) cut++;
      text = bytes.subarray(cut).toString('utf8');
      truncated = true;
    }
    return { text, truncated, fullScreen };
  }

  /**
   * The visible screen as styled runs, for a small rendering (the viewer's overview): each row is a list
   * of runs of equally styled characters; trailing blanks are dropped. Colours are palette indexes or
   * `#rrggbb`; defaults are left out, so a plain screen is mostly bare text.
   */
  async glance(): Promise<{ cols: number; rows: number; lines: GlanceRun[][]; cursor: { x: number; y: number } | null }> {
    await this.catchUp();
    const buf = this.term.buffer.active;
    const cell = buf.getNullCell();
    const colour = (palette: boolean, rgb: boolean, value: number): number | string | undefined =>
      palette ? value : rgb ? '#' + value.toString(16).padStart(6, '0') : undefined;
    const lines: GlanceRun[][] = [];
    for (let y = 0; y < this.term.rows; y++) {
      const line = buf.getLine(buf.viewportY + y);
      const runs: GlanceRun[] = [];
      let key = '';
      let run: GlanceRun | null = null;
      for (let x = 0; line && x < this.term.cols; x++) {
        line.getCell(x, cell);
        if (cell.getWidth() === 0) continue; // the second half of a wide character
        const fg = colour(cell.isFgPalette(), cell.isFgRGB(), cell.getFgColor());
        const bg = colour(cell.isBgPalette(), cell.isBgRGB(), cell.getBgColor());
        const b = cell.isBold() ? 1 : 0;
        const i = cell.isInverse() ? 1 : 0;
        const d = cell.isDim() ? 1 : 0;
        const k = `${fg}|${bg}|${b}${i}${d}`;
        const ch = cell.getChars() || ' ';
        if (run && k === key) run.t += ch;
        else {
          run = { t: ch, ...(fg !== undefined && { fg }), ...(bg !== undefined && { bg }), ...(b && { b: 1 }), ...(i && { i: 1 }), ...(d && { d: 1 }) } as GlanceRun;
          key = k;
          runs.push(run);
        }
      }
      // Blank space at the end of a row with no background says nothing.
      while (runs.length) {
        const last = runs[runs.length - 1];
        if (last.bg !== undefined || last.i) break;
        last.t = last.t.trimEnd();
        if (last.t) break;
        runs.pop();
      }
      lines.push(runs);
    }
    const onScreen = buf.cursorY >= 0 && buf.cursorY < this.term.rows && buf.viewportY === buf.baseY;
    return { cols: this.term.cols, rows: this.term.rows, lines, cursor: onScreen ? { x: buf.cursorX, y: buf.cursorY } : null };
  }

  /**
   * The line a program waits on: the cursor's line (rows it wraps from joined), or, when that is empty
   * (a program that printed its question and a newline), the nearest non-empty line above it. Cut to
   * `maxChars`, keeping the end, where the question usually is.
   */
  async promptLine(maxChars: number): Promise<string | null> {
    await this.catchUp();
    const buf = this.term.buffer.active;
    const lineText = (y: number): string => {
      let text = buf.getLine(y)?.translateToString(true) ?? '';
      for (let up = y; up > 0 && buf.getLine(up)?.isWrapped; up--) text = (buf.getLine(up - 1)?.translateToString(true) ?? '') + text;
      return text;
    };
    const cursorY = buf.baseY + buf.cursorY;
    for (let y = cursorY; y >= Math.max(0, cursorY - ScreenConstants.PromptLookBackLines); y--) {
      if (y < cursorY && buf.getLine(y + 1)?.isWrapped) continue;
      const text = lineText(y).trimEnd();
      if (text.trim()) {
        const chars = [...text.trimStart()];
        return chars.length > maxChars ? '…' + chars.slice(chars.length - maxChars + 1).join('') : chars.join('');
      }
    }
    return null;
  }

  dispose(): void {
    this.disposed = true;
    this.markGone();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.term.dispose();
  }
}

/**
 * xterm's synchronous write, kept on its core (the public method was dropped from the typings but is
 * still there in the pinned version); null if a later version removes it, and then every step is
 * parsed by the ordinary write.
 */
function syncWriter(term: HeadlessTerminal): ((data: Uint8Array) => void) | null {
  const core = (term as unknown as { _core?: { writeSync?: (data: Uint8Array) => void } })._core;
  return typeof core?.writeSync === 'function' ? (data) => core.writeSync!(data) : null;
}

/** A token bucket: at most `perSecond` bytes a second, with a burst of one second's worth. */
class ByteBudget {
  private tokens: number;
  private at = Date.now();

  constructor(private readonly perSecond: number) {
    this.tokens = perSecond;
  }

  take(n: number): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    if (n > this.tokens) return false;
    this.tokens -= n;
    return true;
  }
}
