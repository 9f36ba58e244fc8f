import type { Terminal } from '@xterm/xterm';
import { WebglAddon } from '@xterm/addon-webgl';

export type RendererKind = 'webgl' | 'dom';

/**
 * WebGL draws fast and cheaply; the DOM renderer works everywhere. `?renderer=dom` (or
 * localStorage `ptydeck.renderer = dom`) forces the DOM renderer, for machines whose GPU driver
 * misbehaves and for the tests.
 */
export function domForced(): boolean {
  try {
    const q = new URLSearchParams(window.location.search).get('renderer');
    return (q ?? window.localStorage.getItem('ptydeck.renderer')) === 'dom';
  } catch {
    return false;
  }
}

/**
 * Loads the WebGL renderer when it can. Without WebGL2 the addon throws on activation; when the GPU
 * context is lost later (driver reset, too many contexts) the addon is disposed and xterm falls back
 * to its DOM renderer by itself. `onChange` hears about that second case.
 */
export function attachRenderer(term: Terminal, onChange: (kind: RendererKind) => void): RendererKind {
  if (domForced()) return 'dom';
  let webgl: WebglAddon | null = null;
  try {
    webgl = new WebglAddon();
    const addon = webgl;
    addon.onContextLoss(() => {
      addon.dispose();
      onChange('dom');
    });
    term.loadAddon(addon);
    return 'webgl';
  } catch {
    webgl?.dispose();
    return 'dom';
  }
}
