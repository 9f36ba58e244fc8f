/**
 * A stage on the output path that watches raw PTY bytes for three things, without copying them:
 * our shell-integration markers (see shell-integration.ts), terminal queries (cursor position,
 * device attributes) that some program is waiting to have answered, and window titles a program sets
 * (OSC 0 and OSC 2, what a terminal shows in its title bar).
 *
 * It costs one native `indexOf(ESC)` per chunk of plain text; the rest looks only at escape sequences. Sequences split across chunks are carried
 * over (a few bytes at most), so offsets reported are always absolute offsets in the output log.
 */
export interface Marker {
  kind: 'B' | 'C' | 'D' | 'X';
  /** D: the exit status of the last command; X: the shell's own exit status. */
  exitCode: number | null;
  /** Absolute offsets of the marker's first byte and one past its last. */
  start: number;
  end: number;
}

const ESC = 0x1b;
const BEL = 0x07;
/** A marker is `ESC ] 633 ; D ; 255 ; <24 hex> BEL`; anything longer is not ours. */
const MaxMarkerBytes = 64;
const MaxCsiBytes = 24;
/** A window title longer than this (in bytes, terminator included) is ignored: no listing shows that much. */
const MaxTitleBytes = 1024;
const OSC_633 = Buffer.from('\x1b]633;', 'latin1');
const OSC_TITLE = [Buffer.from('\x1b]0;', 'latin1'), Buffer.from('\x1b]2;', 'latin1')];
const ST_FINAL = 0x5c; /* \ of ESC \ */

type PrefixMatch = 'full' | 'partial' | 'no';

/** Whether `buf` at `at` starts with `prefix`, or with as much of it as the buffer still holds. */
function prefixAt(buf: Buffer, at: number, prefix: Buffer): PrefixMatch {
  const head = Math.min(buf.length, at + prefix.length);
  if (!prefix.subarray(0, head - at).equals(buf.subarray(at, head))) return 'no';
  return head - at < prefix.length ? 'partial' : 'full';
}

export class MarkerScanner {
  private carry: Buffer = Buffer.alloc(0);
  private carryOffset = 0;

  constructor(
    private readonly nonce: string,
    private readonly onMarker: (m: Marker) => void,
    /** A terminal query (one the screen must answer) starts at this offset. */
    private readonly onQuery: (offset: number) => void,
    /** A program set the window title (OSC 0 or 2); the text is as sent, not yet cleaned. */
    private readonly onTitle: (title: string, offset: number) => void = () => undefined,
  ) {}

  feed(chunk: Buffer, offset: number): void {
    let buf = chunk;
    let base = offset;
    if (this.carry.length) {
      buf = Buffer.concat([this.carry, chunk]);
      base = this.carryOffset;
      this.carry = Buffer.alloc(0);
    }
    let pos = 0;
    for (;;) {
      const esc = buf.indexOf(ESC, pos);
      if (esc < 0) return;
      const next = esc + 1 < buf.length ? buf[esc + 1] : -1;
      if (next === -1) return this.keep(buf, esc, base);
      if (next === 0x5d /* ] */) {
        const marker = prefixAt(buf, esc, OSC_633);
        if (marker === 'partial') return this.keep(buf, esc, base);
        if (marker === 'full') {
          const bel = buf.indexOf(BEL, esc + OSC_633.length);
          const cut = buf.indexOf(ESC, esc + OSC_633.length);
          if (cut >= 0 && (bel < 0 || cut < bel) && cut - esc <= MaxMarkerBytes) {
            // An ESC before the BEL cuts this one short (a terminal abandons it there): the ESC may begin ours.
            pos = cut;
            continue;
          }
          if (bel < 0 || bel - esc > MaxMarkerBytes) {
            if (bel < 0 && buf.length - esc <= MaxMarkerBytes) return this.keep(buf, esc, base);
            pos = esc + 1;
            continue;
          }
          this.parseMarker(buf.toString('latin1', esc + OSC_633.length, bel), base + esc, base + bel + 1);
          pos = bel + 1;
          continue;
        }
        const title = titlePrefix(buf, esc);
        if (title === 'partial') return this.keep(buf, esc, base);
        if (title === 'full') {
          const end = titleEnd(buf, esc + 4);
          if (end === null) {
            if (buf.length - esc <= MaxTitleBytes) return this.keep(buf, esc, base);
            pos = esc + 1;
            continue;
          }
          if (end.stop - esc <= MaxTitleBytes) this.onTitle(buf.toString('utf8', esc + 4, end.stop), base + esc);
          pos = end.next;
          continue;
        }
        pos = esc + 1;
        continue;
      }
      if (next === 0x5b /* [ */) {
        let j = esc + 2;
        while (j < buf.length && j - esc < MaxCsiBytes && buf[j] >= 0x20 && buf[j] <= 0x3f) j++;
        if (j >= buf.length) {
          if (j - esc < MaxCsiBytes) return this.keep(buf, esc, base);
          return;
        }
        if (buf[j] < 0x40 || buf[j] > 0x7e) {
          // Cut short (a program killed in the middle of a sequence): an ESC begins whatever comes next,
          // as the shell's marker after `^C` on `yes $'\e[6n'` does, and a terminal abandons the sequence
          // there. (Other control bytes a terminal runs without leaving the sequence: a query written with
          // one inside is answered at the screen's next catch-up, not at once.)
          pos = j;
          continue;
        }
        // Only a query's final byte is worth a string (colours, a sequence in every line, are not).
        if (QueryFinals.has(buf[j]) && isQuery(buf.toString('latin1', esc + 2, j), buf[j])) this.onQuery(base + esc);
        pos = j + 1;
        continue;
      }
      pos = esc + 1;
    }
  }

  private keep(buf: Buffer, from: number, base: number): void {
    this.carry = Buffer.from(buf.subarray(from));
    this.carryOffset = base + from;
  }

  private parseMarker(body: string, start: number, end: number): void {
    const parts = body.split(';');
    if (parts.length < 2 || parts[parts.length - 1] !== this.nonce) return;
    const kind = parts[0];
    if (kind === 'D' || kind === 'X') {
      const code = Number.parseInt(parts[1] ?? '', 10);
      this.onMarker({ kind, exitCode: Number.isFinite(code) ? code : null, start, end });
    } else if (kind === 'B' || kind === 'C') {
      this.onMarker({ kind, exitCode: null, start, end });
    }
  }
}

function titlePrefix(buf: Buffer, at: number): PrefixMatch {
  const a = prefixAt(buf, at, OSC_TITLE[0]);
  return a !== 'no' ? a : prefixAt(buf, at, OSC_TITLE[1]);
}

/** Where a title's text stops (BEL or ESC \) and where scanning goes on after the terminator; null when not in `buf`. */
function titleEnd(buf: Buffer, from: number): { stop: number; next: number } | null {
  for (let j = from; j < buf.length; j++) {
    const c = buf[j];
    if (c === BEL) return { stop: j, next: j + 1 };
    if (c === ESC) {
      if (j + 1 >= buf.length) return null;
      // ESC \ ends the string; any other ESC cuts it short (a terminal abandons it there).
      return { stop: j, next: buf[j + 1] === ST_FINAL ? j + 2 : j };
    }
  }
  return null;
}

/** The final bytes of the CSI queries isQuery knows: n, c and t. */
const QueryFinals = new Set([0x6e, 0x63, 0x74]);

/** DSR (ESC[5n, ESC[6n, ESC[?6n), DA (ESC[c, ESC[0c, ESC[>c, ESC[=c) and window reports (ESC[14t, ESC[18t). */
function isQuery(params: string, final: number): boolean {
  if (final === 0x6e /* n */) return params === '5' || params === '6' || params === '?6';
  if (final === 0x63 /* c */) return params === '' || params === '0' || params === '>' || params === '>0' || params === '=';
  if (final === 0x74 /* t */) return params === '14' || params === '16' || params === '18';
  return false;
}
