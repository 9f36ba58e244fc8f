/**
 * The last screen each terminal tab showed, kept when the tab closes, so that opening it again (and
 * above all while the server cannot be reached) shows that screen at once instead of an empty box.
 * The server's snapshot replaces it as soon as it arrives.
 */
export const ScreenCacheConstants = {
  /** Screens kept (the most recently closed); a screen with its scrollback is some tens of KiB. */
  MaxScreens: 40,
  /** Scrollback kept per screen: enough to read back a little, not a whole log. */
  ScrollbackLines: 500,
} as const;

export interface CachedScreen {
  data: string;
  cols: number;
  rows: number;
}

const screens = new Map<string, CachedScreen>();

export function keepScreen(sessionId: string, screen: CachedScreen): void {
  screens.delete(sessionId);
  screens.set(sessionId, screen);
  while (screens.size > ScreenCacheConstants.MaxScreens) screens.delete(screens.keys().next().value as string);
}

export function lastScreen(sessionId: string): CachedScreen | undefined {
  return screens.get(sessionId);
}

export function forgetScreen(sessionId: string): void {
  screens.delete(sessionId);
}
