import type { CastHeader } from '../../../shared/timeline';

/** An asciicast v2 recording, parsed: the header and its events in time order. */
export interface CastEvent {
  /** Seconds from the header's timestamp. */
  t: number;
  code: 'o' | 'i' | 'r' | 'm';
  data: string;
}

export interface Cast {
  header: CastHeader;
  events: CastEvent[];
  /** The time of the last event. */
  duration: number;
  /** `m` events: the commands, for the scrubber. */
  markers: CastEvent[];
}

export class CastError extends Error {}

export function parseCast(text: string): Cast {
  const lines = text.split('\n');
  let header: CastHeader;
  try {
    header = JSON.parse(lines[0]) as CastHeader;
  } catch {
    throw new CastError('This recording has no readable header');
  }
  if (header.version !== 2 || !(header.width > 0) || !(header.height > 0)) throw new CastError('This is not an asciicast v2 recording');
  const events: CastEvent[] = [];
  let last = 0;
  for (let i = 1; i < lines.length; i++) {
    if (!lines[i]) continue;
    let e: unknown;
    try {
      e = JSON.parse(lines[i]);
    } catch {
      // A live recording's last line may still be on its way: stop there.
      break;
    }
    if (!Array.isArray(e) || typeof e[0] !== 'number' || typeof e[2] !== 'string' || !['o', 'i', 'r', 'm'].includes(e[1])) continue;
    // Times never go back in a player, whatever the file says.
    last = Math.max(last, e[0]);
    events.push({ t: last, code: e[1], data: e[2] });
  }
  return { header, events, duration: last, markers: events.filter((e) => e.code === 'm') };
}

/** Where a moment (an ISO time, say a timeline event's) falls in the recording, in seconds. */
export function castTimeOf(cast: Cast, iso: string): number {
  return Math.max(0, (Date.parse(iso) - cast.header.timestamp * 1000) / 1000);
}

/** `"120x40"` of an `r` event. */
export function parseSize(data: string): { cols: number; rows: number } | null {
  const m = /^(\d{1,4})x(\d{1,4})$/.exec(data);
  return m ? { cols: Number(m[1]), rows: Number(m[2]) } : null;
}
