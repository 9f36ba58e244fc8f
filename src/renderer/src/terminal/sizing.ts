import type { Terminal } from '@xterm/xterm';
import { terminalFont } from './theme';

/**
 * How a terminal fits its pane. The PTY has one size, the agent's; a watching person sees all of it:
 * the font is scaled so the whole screen fits (within readable bounds), and only when even the smallest
 * font cannot fit it does the pane scroll, and say so. The person's own terminal is the other way
 * round: the PTY follows the window, at the normal font.
 */
export const SizingConstants = {
  /** Below this the text is no longer readable on a normal display: scroll instead, and say it is cropped. */
  MinFontPx: 7,
  /** A small PTY in a big window grows only this far; larger text reads worse, not better. */
  MaxFontPx: 16,
  /** Font sizes are tried in steps this small (the renderer rounds cells to device pixels anyway). */
  StepPx: 0.5,
  /** xterm keeps this much room at the right for its scrollbar (FitAddon's default). */
  ScrollbarPx: 14,
  /** Attempts to correct rounding (cell sizes are not exactly linear in the font size). */
  MaxAdjustments: 8,
} as const;

interface Cell {
  width: number;
  height: number;
}

/** The terminal's cell in CSS pixels, as its renderer laid it out (what FitAddon reads too). */
export function cellSize(term: Terminal): Cell | null {
  const dims = (term as unknown as { _core?: { _renderService?: { dimensions?: { css?: { cell?: Cell } } } } })._core?._renderService?.dimensions?.css?.cell;
  return dims && dims.width > 0 && dims.height > 0 ? { width: dims.width, height: dims.height } : null;
}

export interface Room {
  width: number;
  height: number;
}

/** The space inside `el` for a terminal: its content box. */
export function roomIn(el: HTMLElement): Room {
  const cs = window.getComputedStyle(el);
  const px = (v: string): number => Number.parseFloat(v) || 0;
  return {
    width: el.clientWidth - px(cs.paddingLeft) - px(cs.paddingRight),
    height: el.clientHeight - px(cs.paddingTop) - px(cs.paddingBottom),
  };
}

const needs = (term: Terminal, cell: Cell): Room => ({ width: term.cols * cell.width + SizingConstants.ScrollbarPx, height: term.rows * cell.height });

/**
 * Sets the font size at which the terminal's whole screen fits `room`; returns it, and whether even the
 * smallest font leaves it cropped.
 */
export function scaleToFit(term: Terminal, room: Room): { fontSize: number; cropped: boolean } {
  const { MinFontPx, MaxFontPx, StepPx } = SizingConstants;
  const snap = (f: number): number => Math.min(MaxFontPx, Math.max(MinFontPx, Math.floor(f / StepPx) * StepPx));
  let cell = cellSize(term);
  if (!cell || room.width <= 0 || room.height <= 0) return { fontSize: term.options.fontSize ?? terminalFont.fontSize, cropped: false };
  const current = term.options.fontSize ?? terminalFont.fontSize;
  const need = needs(term, cell);
  const ratio = Math.min((room.width - SizingConstants.ScrollbarPx) / (need.width - SizingConstants.ScrollbarPx), room.height / need.height);
  let font = snap(current * ratio);
  const apply = (f: number): void => {
    if (term.options.fontSize !== f) term.options.fontSize = f;
    cell = cellSize(term) ?? cell;
  };
  apply(font);
  for (let i = 0; i < SizingConstants.MaxAdjustments; i++) {
    const n = needs(term, cell!);
    if (n.width <= room.width && n.height <= room.height) break;
    if (font <= MinFontPx) break;
    font = snap(font - StepPx);
    apply(font);
  }
  const n = needs(term, cell!);
  return { fontSize: font, cropped: n.width > room.width + 0.5 || n.height > room.height + 0.5 };
}

/** The PTY size that fills `room` at the normal font (the person's own terminal, or "Fit to my window"). */
export function sizeForRoom(term: Terminal, room: Room): { cols: number; rows: number } | null {
  const cell = cellSize(term);
  if (!cell) return null;
  const scale = (term.options.fontSize ?? terminalFont.fontSize) / terminalFont.fontSize;
  // Measured at the current font; the size is for the normal one.
  const w = cell.width / scale;
  const h = cell.height / scale;
  return {
    cols: Math.max(2, Math.floor((room.width - SizingConstants.ScrollbarPx) / w)),
    rows: Math.max(1, Math.floor(room.height / h)),
  };
}
