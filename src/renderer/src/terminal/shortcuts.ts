/**
 * The terminal's own shortcuts. Plain Ctrl+C/V/F belong to the program in the terminal (interrupt,
 * literal next, forward), so ours carry Shift, as in most Linux terminals.
 */
export type ShortcutAction = 'copy' | 'paste' | 'find';

export function shortcutOf(ev: KeyboardEvent): ShortcutAction | null {
  if (!ev.ctrlKey || !ev.shiftKey || ev.altKey || ev.metaKey) return null;
  switch (ev.key.toLowerCase()) {
    case 'c':
      return 'copy';
    case 'v':
      return 'paste';
    case 'f':
      return 'find';
    default:
      return null;
  }
}

/** A key that would type something if the person held the floor (for the "read only" hint). */
export function wouldType(ev: KeyboardEvent): boolean {
  if (ev.metaKey || ev.altKey) return false;
  if (ev.ctrlKey) return /^[a-z]$/i.test(ev.key);
  return ev.key.length === 1 || ev.key === 'Enter' || ev.key === 'Backspace' || ev.key === 'Tab';
}
