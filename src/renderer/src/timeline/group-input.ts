import type { TimelineEvent } from '../../../shared/timeline';

/**
 * A person types one key per event: shown one a row, a typed command fills the panel. Consecutive plain
 * keystrokes by the same person through the same door, each within KeystrokeGapMs of the last, are shown
 * as one row (the journal keeps every event). A command run, hidden input, or any other event ends a run.
 */
export const KeystrokeGapMs = 2000;

export type TimelineRow = { event: TimelineEvent; last: TimelineEvent; text: string | null; count: number };

export function groupKeystrokes(events: readonly TimelineEvent[]): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (const e of events) {
    const prev = rows[rows.length - 1];
    const plain = e.kind === 'input' && !e.hidden && e.command === undefined;
    if (
      plain &&
      prev &&
      prev.text !== null &&
      prev.last.who === e.who &&
      prev.last.door === e.door &&
      prev.last.session === e.session &&
      Date.parse(e.at) - Date.parse(prev.last.at) <= KeystrokeGapMs
    ) {
      prev.text += e.text;
      prev.last = e;
      prev.count++;
      continue;
    }
    rows.push({ event: e, last: e, text: plain ? e.text : null, count: 1 });
  }
  return rows;
}
