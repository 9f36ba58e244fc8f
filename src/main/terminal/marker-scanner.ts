/**
 * A stage on the output path that watches raw PTY bytes for two things, without copying them:
 * our shell-integration markers (see shell-integration.ts), and terminal queries (cursor position,
 * device attributes) that some program is waiting to have answered.
 *
 * It costs one native `indexOf(ESC)` per chunk of plain text. Sequences split across chunks are carried
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
const OSC_633 = Buffer.from('\x1b]633;', 'latin1');

export class MarkerScanner {
  private carry: Buffer = Buffer.alloc(0);
  private carryOffset = 0;

  constructor(
    private readonly nonce: string,
    private readonly onMarker: (m: Marker) => void,
    private readonly onQuery: () => void,
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
        const head = Math.min(buf.length, esc + OSC_633.length);
        if (!OSC_633.subarray(0, head - esc).equals(buf.subarray(esc, head))) {
          pos = esc + 1;
          continue;
        }
        if (head - esc < OSC_633.length) return this.keep(buf, esc, base);
        const bel = buf.indexOf(BEL, esc + OSC_633.length);
        if (bel < 0 || bel - esc > MaxMarkerBytes) {
          if (bel < 0 && buf.length - esc <= MaxMarkerBytes) return this.keep(buf, esc, base);
          pos = esc + 1;
          continue;
        }
        this.parseMarker(buf.toString('latin1', esc + OSC_633.length, bel), base + esc, base + bel + 1);
        pos = bel + 1;
        continue;
      }
      if (next === 0x5b /* [ */) {
        let j = esc + 2;
        while (j < buf.length && j - esc < MaxCsiBytes && buf[j] >= 0x20 && buf[j] <= 0x3f) j++;
        if (j >= buf.length) {
          if (j - esc < MaxCsiBytes) return this.keep(buf, esc, base);
          return;
        }
        if (isQuery(buf.toString('latin1', esc + 2, j), buf[j])) this.onQuery();
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

/** DSR (ESC[5n, ESC[6n, ESC[?6n), DA (ESC[c, ESC[0c, ESC[>c, ESC[=c) and window reports (ESC[14t, ESC[18t). */
function isQuery(params: string, final: number): boolean {
  if (final === 0x6e /* n */) return params === '5' || params === '6' || params === '?6';
  if (final === 0x63 /* c */) return params === '' || params === '0' || params === '>' || params === '>0' || params === '=';
  if (final === 0x74 /* t */) return params === '14' || params === '16' || params === '18';
  return false;
}
