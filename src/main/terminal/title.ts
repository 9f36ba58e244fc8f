import { TitleLimits } from '../../shared/types';

/**
 * Session titles: what a person reads on a tab to tell terminals apart. One is set through the API (by
 * the session's agent or the person); a program may set its own window title (OSC 0/2); both are
 * cleaned the same way here, since either ends up in every listing.
 */

/** C0 controls, DEL and C1 controls: nothing a title may carry (they would drive the viewer's terminal or logs). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]+/g;

/** Why `title` may not be set through the API, or null when it may (an empty string clears the title). */
export function titleProblem(title: string): string | null {
  if (CONTROL.test(title)) return 'must not contain control characters (newlines, escapes, tabs)';
  if ([...title.trim()].length > TitleLimits.MaxChars) return `must be at most ${TitleLimits.MaxChars} characters`;
  return null;
}

/** An API title as stored: trimmed; empty means none. Callers validate first (titleProblem). */
export function normalTitle(title: string | null | undefined): string | null {
  const t = (title ?? '').trim();
  return t ? t : null;
}

/** A program's window title made safe to list: controls dropped, spaces squeezed, cut to the limit. */
export function cleanWindowTitle(raw: string): string | null {
  const t = raw.replace(CONTROLS, ' ').replace(/\s+/g, ' ').trim();
  if (!t) return null;
  const chars = [...t];
  return chars.length > TitleLimits.MaxChars ? chars.slice(0, TitleLimits.MaxChars - 1).join('') + '…' : t;
}
