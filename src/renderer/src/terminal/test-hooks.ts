import type { Terminal } from '@xterm/xterm';
import type { RendererKind } from './renderer-choice';

/**
 * Read-only hooks for the browser tests (and for anyone debugging from the console). They read xterm's
 * buffer, so they work the same with the WebGL renderer, which draws no text into the DOM.
 *
 *   window.__ptydeckTerminalText(id)      → the buffer's text (scrollback and screen), or null
 *   window.__ptydeckTerminalRenderer(id)  → 'webgl' | 'dom' | null
 *   window.__ptydeckTerminalSelection(id) → the selected text, or null
 *   window.__ptydeckTerminalSize(id)      → {cols, rows}, or null
 *   window.__ptydeckTerminalColor(id, s)  → the foreground of the first cell of text `s`: {mode, color}, or null
 */
interface Inspectable {
  term: Terminal;
  renderer: RendererKind;
}

const open = new Map<string, Inspectable>();

export function exposeForTests(sessionId: string, t: Inspectable): () => void {
  open.set(sessionId, t);
  return () => {
    if (open.get(sessionId) === t) open.delete(sessionId);
  };
}

export function bufferText(term: Terminal): string {
  const buf = term.buffer.active;
  const lines: string[] = [];
  for (let i = 0; i < buf.length; i++) {
    const line = buf.getLine(i);
    if (!line) continue;
    // A wrapped row continues the previous one: join them, as a person would read it.
    if (line.isWrapped && lines.length) lines[lines.length - 1] += line.translateToString(true);
    else lines.push(line.translateToString(true));
  }
  while (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines.join('\n');
}

window.__ptydeckTerminalText = (id) => {
  const t = open.get(id);
  return t ? bufferText(t.term) : null;
};
window.__ptydeckTerminalRenderer = (id) => open.get(id)?.renderer ?? null;
window.__ptydeckTerminalSelection = (id) => open.get(id)?.term.getSelection() ?? null;
window.__ptydeckTerminalSize = (id) => {
  const t = open.get(id);
  return t ? { cols: t.term.cols, rows: t.term.rows } : null;
};

window.__ptydeckTerminalColor = (id, needle) => {
  const t = open.get(id);
  if (!t) return null;
  const buf = t.term.buffer.active;
  for (let i = 0; i < buf.length; i++) {
    const line = buf.getLine(i);
    const at = line?.translateToString(true).indexOf(needle) ?? -1;
    if (!line || at < 0) continue;
    const cell = line.getCell(at);
    if (!cell) return null;
    const mode = cell.isFgDefault() ? 'default' : cell.isFgPalette() ? 'palette' : 'rgb';
    return { mode, color: cell.getFgColor() };
  }
  return null;
};
