import type { TimelineEvent } from '../../../shared/timeline';

/** How the timeline reads to a person: a short verb and the detail that matters. */
export interface EventText {
  title: string;
  detail: string;
  /** Colours the row: who acts on the floor, refusals, failures. */
  tone: 'plain' | 'command' | 'floor' | 'refused' | 'fail' | 'hidden' | 'system';
}

const visible = (s: string): string =>
  s
    .replace(/\r/g, '⏎')
    .replace(/\n/g, '↵')
    .replace(/\t/g, '⇥')
    .replace(/\x1b/g, '⎋')
    // Other control characters as ^X, the way a terminal user writes them.
    .replace(/[\x00-\x1f\x7f]/g, (c) => (c === '\x7f' ? '⌫' : `^${String.fromCharCode(c.charCodeAt(0) + 64)}`));

export function describeEvent(e: TimelineEvent): EventText {
  switch (e.kind) {
    case 'created':
      return { title: e.restored ? 'Taken back after a restart' : 'Opened', detail: `${e.cols}×${e.rows} via ${e.origin}`, tone: 'system' };
    case 'closed':
      return { title: 'Closed', detail: e.survivors ? `${e.survivors} process(es) survived` : '', tone: 'system' };
    case 'input':
      if (e.hidden) return { title: 'Typed a secret', detail: e.text, tone: 'hidden' };
      if (e.command !== undefined) return { title: 'Ran', detail: e.command, tone: 'command' };
      return { title: 'Typed', detail: visible(e.text) + (e.truncated ? ` … (${e.bytes} bytes)` : ''), tone: 'plain' };
    case 'command-started':
      return { title: 'Command started', detail: e.command ?? '', tone: 'command' };
    case 'command-ended':
      return { title: e.exitCode === 0 ? 'Command done' : 'Command failed', detail: `${e.command ?? ''}${e.exitCode === null ? '' : ` → exit ${e.exitCode}`}`, tone: e.exitCode === 0 ? 'command' : 'fail' };
    case 'floor':
      return { title: e.mode === 'takeover' ? 'Took over' : e.mode === 'type' ? 'Typing alongside' : 'Released (watching)', detail: e.reason ?? '', tone: 'floor' };
    case 'refused':
      return { title: 'Refused', detail: `${e.action} — a person held the floor`, tone: 'refused' };
    case 'signal':
      return { title: `Sent ${e.signal}`, detail: e.delivered ? '' : 'not delivered', tone: 'plain' };
    case 'resized':
      return { title: 'Resized', detail: `${e.cols}×${e.rows}`, tone: 'system' };
    case 'exit':
      return { title: 'Shell exited', detail: e.exitCode !== null ? `code ${e.exitCode}` : e.signal !== null ? `signal ${e.signal}` : '', tone: e.exitCode === 0 ? 'system' : 'fail' };
    case 'approval':
      return { title: `Approval ${e.decision}`, detail: [e.command, e.reason].filter(Boolean).join(' — '), tone: e.decision === 'denied' ? 'refused' : 'floor' };
    case 'note':
      return { title: 'Note', detail: e.text, tone: 'system' };
  }
}

/** `person` reads as "You"; agents by name. */
export const whoLabel = (who: string): string => (who === 'person' ? 'You' : who);

export function clockTime(iso: string): string {
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}
