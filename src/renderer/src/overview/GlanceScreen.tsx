import { memo, useSyncExternalStore, type CSSProperties } from 'react';
import type { GlanceRun } from '../../../shared/types';
import type { DeckStore } from '../deck/deck-store';
import { cssColour, DEFAULT_BG, DEFAULT_FG } from './palette';

/**
 * A small, live rendering of one session's screen: text runs in the terminal's colours, drawn as
 * plain DOM (no terminal emulator per card: the server has parsed the screen already), scaled to the
 * card's width by its column count.
 */
export function GlanceScreen({ deck, id }: { deck: DeckStore; id: string }) {
  const glance = useSyncExternalStore(
    (l) => deck.subscribeGlance(id, l),
    () => deck.glance(id),
  );
  if (!glance) return <div className="glance glance-empty" data-testid="glance" data-state="loading" />;
  const style = { '--glance-cols': glance.cols, '--glance-rows': glance.rows } as CSSProperties;
  return (
    <div className="glance" data-testid="glance" data-state="live" style={style} aria-hidden="true">
      <div className="glance-rows">
        {glance.lines.map((runs, y) => (
          <GlanceRow key={y} runs={runs} cursorX={glance.cursor?.y === y ? glance.cursor.x : null} />
        ))}
      </div>
    </div>
  );
}

const GlanceRow = memo(
  function GlanceRow({ runs, cursorX }: { runs: GlanceRun[]; cursorX: number | null }) {
    return (
      <div className="glance-row">
        {runs.map((r, i) => (
          <span key={i} style={runStyle(r)}>
            {r.t}
          </span>
        ))}
        {cursorX !== null && runs.length === 0 ? <span className="glance-cursor"> </span> : null}
      </div>
    );
  },
  // Rows arrive as new arrays on every glance: compare what they show, so unchanged rows skip the DOM.
  (a, b) => a.cursorX === b.cursorX && JSON.stringify(a.runs) === JSON.stringify(b.runs),
);

function runStyle(r: GlanceRun): CSSProperties | undefined {
  if (r.fg === undefined && r.bg === undefined && !r.b && !r.i && !r.d) return undefined;
  let fg = cssColour(r.fg);
  let bg = cssColour(r.bg);
  if (r.i) [fg, bg] = [bg ?? DEFAULT_BG, fg ?? DEFAULT_FG];
  return { color: fg, background: bg, fontWeight: r.b ? 700 : undefined, opacity: r.d ? 0.6 : undefined };
}
