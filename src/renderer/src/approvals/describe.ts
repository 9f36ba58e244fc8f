import type { Approval } from '../../../shared/approvals';

/** How the viewer talks about an approval: one wording for cards, banners and tests. */

/** Why it waits, in words: which rule, or the default, or ptydeck's own rule about its hook. */
export function whyItWaits(a: Approval): string {
  const m = a.match;
  if (m.rule === -1) return "It would change ptydeck's approval hook in the shell";
  if (m.rule === -2) return 'The policy asks about every command (default: ask)';
  if (m.rule === -3) return 'Checking it against the rules took too long, so it is asked about to be safe';
  const where = m.start === null ? ' (once its quotes are taken out)' : '';
  return `Rule ${m.rule + 1}: /${m.pattern}/${where}`;
}

/** `command` cut where the rule matched, for highlighting. */
export function splitAtMatch(a: Approval): { before: string; match: string; after: string } {
  const { start, end } = a.match;
  if (start === null || end === null || end <= start) return { before: a.command, match: '', after: '' };
  return { before: a.command.slice(0, start), match: a.command.slice(start, end), after: a.command.slice(end) };
}

export function timeLeft(expiresAt: string, now: number): string {
  const s = Math.max(0, Math.round((Date.parse(expiresAt) - now) / 1000));
  const m = Math.floor(s / 60);
  return m > 0 ? `${m}m ${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

export function ago(at: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(at)) / 1000));
  if (s < 60) return `${s}s ago`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ago` : `${Math.floor(m / 60)}h ${m % 60}m ago`;
}
