import { useEffect, useRef, useState } from 'react';
import type { Glance } from '../../../shared/types';
import type { DeckStore } from '../deck/deck-store';
import { terminalFont } from '../terminal/theme';
import { cssColour, DEFAULT_BG, DEFAULT_FG } from './palette';

/**
 * A small, live rendering of one session's screen: the server's headless terminal has parsed it, and
 * the glance (text runs and colours) is painted onto a canvas, scaled so the whole screen fits.
 *
 * A canvas, not DOM text: thirty busy screens as spans meant thousands of nodes and a layout of the
 * page for every glance (measured in bench/cases/overview-render.ts); a canvas repaints itself alone.
 * The plain text stays in the canvas's fallback content, for screen readers and tests, where it costs
 * no layout. Only cards in view are glanced (Overview.tsx); the rest keep their last picture.
 */
export const GlanceDrawing = {
  /** Room around the text, in CSS pixels. */
  PaddingPx: 4,
  /** A row's height in font sizes (the terminal's own line height is 1.1; a little air reads better small). */
  LineHeight: 1.15,
} as const;

export function GlanceScreen({ deck, id }: { deck: DeckStore; id: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [live, setLive] = useState(() => deck.glance(id) !== undefined);

  // Painted straight from the store, outside React's render: a glance changes pixels, not the tree.
  useEffect(() => {
    const el = canvas.current;
    if (!el) return;
    let shown: Glance | undefined;
    const paint = (force = false): void => {
      const g = deck.glance(id);
      if (!g || (g === shown && !force)) return;
      shown = g;
      draw(el, g);
      el.textContent = plainText(g);
      setLive(true);
    };
    paint();
    const off = deck.subscribeGlance(id, () => paint());
    // A card that changes size (the window, the grid's columns) repaints at its new size.
    const observer = new ResizeObserver(() => paint(true));
    observer.observe(el);
    return () => {
      off();
      observer.disconnect();
    };
  }, [deck, id]);

  return (
    <div className="glance" data-testid="glance" data-state={live ? 'live' : 'loading'}>
      <canvas ref={canvas} className="glance-canvas" />
    </div>
  );
}

function plainText(g: Glance): string {
  return g.lines.map((runs) => runs.map((r) => r.t).join('')).join('\n');
}

/** Width of a monospace cell per pixel of font size, measured once. */
let cellRatio = 0;

function draw(canvas: HTMLCanvasElement, g: Glance): void {
  const dpr = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  if (width === 0 || height === 0) return;
  if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
  }
  const ctx = canvas.getContext('2d');
  if (!ctx) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = DEFAULT_BG;
  ctx.fillRect(0, 0, width, height);
  const family = terminalFont.fontFamily;
  if (!cellRatio) {
    ctx.font = `100px ${family}`;
    cellRatio = ctx.measureText('M').width / 100 || 0.6;
  }
  const pad = GlanceDrawing.PaddingPx;
  const size = Math.min((width - 2 * pad) / (g.cols * cellRatio), (height - 2 * pad) / (g.rows * GlanceDrawing.LineHeight));
  const cellW = size * cellRatio;
  const lineH = size * GlanceDrawing.LineHeight;
  ctx.textBaseline = 'top';
  let font = '';
  for (let y = 0; y < g.lines.length; y++) {
    const top = pad + y * lineH;
    const runs = g.lines[y];
    // Backgrounds first, then the text in as few strokes as the styles allow: software rasterizers
    // pay per fillText call, so runs that differ only in background are drawn as one.
    let col = 0;
    const strokes: { text: string; col: number; fg: string; bold: boolean; dim: boolean }[] = [];
    for (const r of runs) {
      let fg = cssColour(r.fg) ?? DEFAULT_FG;
      let bg = cssColour(r.bg);
      if (r.i) [fg, bg] = [bg ?? DEFAULT_BG, fg];
      if (bg) {
        ctx.fillStyle = bg;
        ctx.fillRect(pad + col * cellW, top, r.t.length * cellW, lineH);
      }
      const last = strokes[strokes.length - 1];
      if (last && last.fg === fg && last.bold === !!r.b && last.dim === !!r.d) last.text += r.t;
      else strokes.push({ text: r.t, col, fg, bold: !!r.b, dim: !!r.d });
      col += r.t.length;
    }
    for (const s of strokes) {
      if (!s.text.trim()) continue;
      const want = `${s.bold ? 'bold ' : ''}${size.toFixed(2)}px ${family}`;
      if (want !== font) ctx.font = font = want;
      ctx.globalAlpha = s.dim ? 0.6 : 1;
      ctx.fillStyle = s.fg;
      ctx.fillText(s.text, pad + s.col * cellW, top + (lineH - size) / 2);
    }
  }
  ctx.globalAlpha = 1;
  if (g.cursor) {
    ctx.fillStyle = 'rgba(230, 237, 243, 0.6)';
    ctx.fillRect(pad + g.cursor.x * cellW, pad + g.cursor.y * lineH, cellW, lineH);
  }
}
