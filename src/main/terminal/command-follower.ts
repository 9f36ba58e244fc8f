import type { CommandRecord } from './commands';
import type { OutputLog } from './output-log';
import { renderPlainText } from './plain-text';
import { incompleteTailLength } from './utf8';

/**
 * A command's output as it arrives, as the text a person would read: whole lines while it runs (a line
 * is final once its newline has come; until then a `\r` progress bar may still rewrite it), and the
 * rest when it ends. Offsets into the session log, so a slow reader holds no copy of anything.
 */
export const FollowerConstants = {
  /** Most log bytes rendered in one piece; a line longer than this goes out in pieces. */
  MaxPieceBytes: 64 * 1024,
} as const;

export interface FollowedPiece {
  text: string;
  /** Bytes of this command's output the log dropped before they were read (the reader fell behind). */
  lost: number;
}

export class CommandFollower {
  private next: number | null = null;

  constructor(
    private readonly log: OutputLog,
    readonly record: CommandRecord,
  ) {}

  /** The next piece that has become final, or null when there is none yet. Call until null to drain. */
  take(): FollowedPiece | null {
    const rec = this.record;
    if (rec.outputStart === null) return null;
    let from = this.next ?? rec.outputStart;
    let lost = 0;
    if (from < this.log.start) {
      lost = this.log.start - from;
      from = this.log.start;
    }
    const ended = rec.outputEnd !== null;
    const end = rec.outputEnd ?? this.log.end;
    this.next = from;
    if (from >= end) return lost ? { text: '', lost } : null;
    const hi = Math.min(end, from + FollowerConstants.MaxPieceBytes);
    const bytes = this.log.read(from, hi);
    if (from < this.log.start) {
      // Lost while being read (spilled output that could not be read back): counted with the rest.
      const rest = this.take()!;
      return { ...rest, lost: rest.lost + lost };
    }
    let cut: number;
    if (ended && hi === end) cut = bytes.length;
    else {
      const nl = bytes.lastIndexOf(0x0a);
      if (nl >= 0) cut = nl + 1;
      else if (hi - from === FollowerConstants.MaxPieceBytes) cut = bytes.length - incompleteTailLength(bytes);
      else return lost ? { text: '', lost } : null;
    }
    this.next = from + cut;
    return { text: renderLines(bytes.subarray(0, cut).toString('utf8')), lost };
  }
}

/** Each line rendered on its own, so blank lines and the final newline survive (renderPlainText trims them). */
function renderLines(text: string): string {
  const lines = text.split('\n');
  const last = lines.pop()!;
  return lines.map((l) => renderPlainText(l) + '\n').join('') + (last ? renderPlainText(last) : '');
}
