import { terminalTheme } from '../terminal/theme';

/**
 * The 256-colour palette as xterm.js draws it, with our theme's first 16: so a glance of a screen has
 * the same colours as the terminal itself.
 */
const ANSI16 = [
  terminalTheme.black,
  terminalTheme.red,
  terminalTheme.green,
  terminalTheme.yellow,
  terminalTheme.blue,
  terminalTheme.magenta,
  terminalTheme.cyan,
  terminalTheme.white,
  terminalTheme.brightBlack,
  terminalTheme.brightRed,
  terminalTheme.brightGreen,
  terminalTheme.brightYellow,
  terminalTheme.brightBlue,
  terminalTheme.brightMagenta,
  terminalTheme.brightCyan,
  terminalTheme.brightWhite,
] as string[];

const hex = (n: number): string => n.toString(16).padStart(2, '0');

const PALETTE: string[] = (() => {
  const out = [...ANSI16];
  // 6x6x6 cube, then 24 greys (xterm's values).
  const level = [0, 95, 135, 175, 215, 255];
  for (let r = 0; r < 6; r++) for (let g = 0; g < 6; g++) for (let b = 0; b < 6; b++) out.push(`#${hex(level[r])}${hex(level[g])}${hex(level[b])}`);
  for (let i = 0; i < 24; i++) {
    const v = 8 + i * 10;
    out.push(`#${hex(v)}${hex(v)}${hex(v)}`);
  }
  return out;
})();

/** A glance colour (palette index or `#rrggbb`) as CSS; undefined stays the default. */
export function cssColour(c: number | string | undefined): string | undefined {
  if (c === undefined) return undefined;
  return typeof c === 'number' ? PALETTE[c] : c;
}

export const DEFAULT_FG = terminalTheme.foreground as string;
export const DEFAULT_BG = terminalTheme.background as string;
