import { Sock } from './transport';

/**
 * The sessions the attack must not disturb. Each runs a program that prints a deterministic sequence in
 * bursts, one burst per line it reads ("50\n" prints the next 50 lines), with the terminal's echo off so
 * that nothing but the program's output is in the stream:
 *
 *   READY-X\r\n  live-X-1\r\n  live-X-2\r\n ...  live-X-K\r\n  DONE-X\r\n
 *
 * The driver triggers bursts through the watching socket for as long as the attack runs, so the output
 * spans the whole attack, interleaved with it. Afterwards what each watcher received, and what the
 * session's output log holds, are compared byte for byte with that text.
 */
export const liveProgram = (label: string): string =>
  `stty -echo; printf 'READY-%s\\n' ${label}; k=0; while IFS= read -r n; do [ "$n" = q ] && break; i=0; ` +
  `while [ "$i" -lt "$n" ]; do i=$((i+1)); k=$((k+1)); echo "live-${label}-$k"; done; done; printf 'DONE-%s\\n' ${label}; stty echo`;

export type WatchKind = 'execd' | 'aio-binary' | 'aio-json';

export class LiveSession {
  lines = 0;
  bursts = 0;

  constructor(
    readonly id: string,
    readonly label: string,
    readonly kind: WatchKind,
    readonly owner: string,
    readonly watcher: Sock,
  ) {}

  /** Everything the watcher received as terminal output, as bytes (latin1 keeps them one to one). */
  received(): string {
    const parts: Buffer[] = [];
    for (const f of this.watcher.frames) {
      if (this.kind === 'execd') {
        if (f.binary && (f.binary[0] === 0x01 || f.binary[0] === 0x02)) parts.push(f.binary.subarray(1));
        else if (f.binary && f.binary[0] === 0x03) parts.push(f.binary.subarray(9));
      } else if (this.kind === 'aio-binary') {
        if (f.binary) parts.push(f.binary);
      } else if (f.json && typeof f.json === 'object' && f.json.type === 'output' && typeof f.json.data === 'string') {
        parts.push(Buffer.from(f.json.data, 'utf8'));
      }
    }
    return Buffer.concat(parts).toString('latin1');
  }

  /** Frames the watcher got that a quiet, undisturbed watcher should never get. */
  unexpectedFrames(): unknown[] {
    return this.watcher.frames
      .filter((f) => f.json && typeof f.json === 'object')
      .map((f) => f.json)
      .filter((m) => ['error', 'relay_replaced', 'exit', 'resync'].includes(m.type));
  }

  write(text: string): void {
    if (this.kind === 'execd') this.watcher.send(Buffer.concat([Buffer.from([0x00]), Buffer.from(text)]), true);
    else if (this.kind === 'aio-binary') this.watcher.send(Buffer.from(text), true);
    else this.watcher.send(JSON.stringify({ type: 'input', data: text }));
  }

  burst(n: number): void {
    this.write(`${n}\n`);
    this.lines += n;
    this.bursts++;
  }

  expected(): string {
    let s = `READY-${this.label}\r\n`;
    for (let k = 1; k <= this.lines; k++) s += `live-${this.label}-${k}\r\n`;
    return s + `DONE-${this.label}\r\n`;
  }

  /**
   * The program's part of a stream: from READY to the end of DONE. For the execd session the stream is
   * the program's alone (it is the session's command), so it must be exactly that with nothing around it.
   */
  static region(stream: string, label: string): { region: string | null; before: string; count: number } {
    const start = stream.indexOf(`READY-${label}\r\n`);
    const doneMark = `DONE-${label}\r\n`;
    const done = stream.indexOf(doneMark, Math.max(0, start));
    const count = stream.split(`READY-${label}\r\n`).length - 1;
    if (start < 0 || done < 0) return { region: null, before: start < 0 ? stream : stream.slice(0, start), count };
    return { region: stream.slice(start, done + doneMark.length), before: stream.slice(0, start), count };
  }
}

/** Where two strings first differ, with context, for an assertion message. */
export function firstDifference(actual: string, expected: string): string {
  const n = Math.min(actual.length, expected.length);
  let i = 0;
  while (i < n && actual[i] === expected[i]) i++;
  if (i === n && actual.length === expected.length) return 'identical';
  const ctx = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 60), i + 60));
  return `first difference at byte ${i} of ${expected.length} expected (${actual.length} received): expected …${ctx(expected)}…, received …${ctx(actual)}…`;
}
