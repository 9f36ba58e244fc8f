import type { ITheme } from '@xterm/xterm';

/** A dark palette with enough contrast for long reading; ANSI colours after GitHub's dark-dimmed. */
export const terminalTheme: ITheme = {
  background: '#0b0e13',
  foreground: '#cdd3dc',
  cursor: '#e6edf3',
  cursorAccent: '#0b0e13',
  selectionBackground: '#2d4f7c',
  selectionInactiveBackground: '#26384f',
  scrollbarSliderBackground: 'rgba(139, 148, 158, 0.25)',
  scrollbarSliderHoverBackground: 'rgba(139, 148, 158, 0.4)',
  scrollbarSliderActiveBackground: 'rgba(139, 148, 158, 0.55)',
  black: '#2d333b',
  red: '#f47067',
  green: '#57ab5a',
  yellow: '#c69026',
  blue: '#539bf5',
  magenta: '#b083f0',
  cyan: '#39c5cf',
  white: '#adbac7',
  brightBlack: '#636e7b',
  brightRed: '#ff938a',
  brightGreen: '#6bc46d',
  brightYellow: '#daaa3f',
  brightBlue: '#6cb6ff',
  brightMagenta: '#dcbdfb',
  brightCyan: '#56d4dd',
  brightWhite: '#e6edf3',
};

export const terminalFont = {
  fontFamily: '"JetBrains Mono", "Cascadia Mono", "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace',
  fontSize: 13,
  lineHeight: 1.1,
} as const;

/** Search highlights, readable on the background above. */
export const searchDecorations = {
  matchBackground: '#5a4a1a',
  matchBorder: '#c69026',
  matchOverviewRuler: '#c69026',
  activeMatchBackground: '#c69026',
  activeMatchBorder: '#ffd58a',
  activeMatchColorOverviewRuler: '#ffd58a',
} as const;
