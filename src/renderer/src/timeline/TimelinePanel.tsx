import { useEffect, useMemo, useRef, useState } from 'react';
import type { TimelineEvent } from '../../../shared/timeline';
import { ApiError } from '../api/rest';
import { clockTime, describeEvent, whoLabel } from './describe-event';
import { groupKeystrokes } from './group-input';
import { timelineApi, type TimelineSource } from './timeline-api';
import './timeline.css';

export const TimelineTiming = {
  /** A live session's timeline asks for what is new this often (plus whenever its summary changes). */
  LivePollMs: 2000,
  /** The most events a panel keeps: the newest. */
  MaxEvents: 5000,
} as const;

interface TimelinePanelProps {
  source: TimelineSource;
  live: boolean;
  /** Changes whenever the session's summary changes: a cue to fetch what is new at once. */
  refreshKey?: unknown;
  /** The event the replay shows, highlighted. */
  selectedSeq?: number | null;
  /** A click on an event: the replay jumps there. */
  onPick?(e: TimelineEvent): void;
}

/** Who did what and when, newest at the bottom, filterable by who. */
export function TimelinePanel({ source, live, refreshKey, selectedSeq, onPick }: TimelinePanelProps) {
  const [events, setEvents] = useState<TimelineEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [hiddenWho, setHiddenWho] = useState<ReadonlySet<string>>(new Set());
  const next = useRef(0);
  const list = useRef<HTMLOListElement>(null);
  const stick = useRef(true);
  const sourceKey = source.kind === 'session' ? `s:${source.id}` : `r:${source.key}`;

  // A new source starts over.
  useEffect(() => {
    next.current = 0;
    setEvents([]);
    setError(null);
  }, [sourceKey]);

  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const load = async () => {
      try {
        // Pages of the journal until it says there is no more.
        for (;;) {
          const page = await timelineApi.timeline(source, next.current);
          if (cancelled) return;
          next.current = page.next;
          if (page.events.length) setEvents((old) => [...old, ...page.events].slice(-TimelineTiming.MaxEvents));
          setError(null);
          if (!page.more) break;
        }
      } catch (err) {
        if (!cancelled) setError(err instanceof ApiError ? err.message : String(err));
      }
      if (!cancelled && live) timer = setTimeout(() => void load(), TimelineTiming.LivePollMs);
    };
    void load();
    return () => {
      cancelled = true;
      if (timer) clearTimeout(timer);
    };
    // `source` is described by sourceKey; refreshKey asks for what is new.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [sourceKey, live, refreshKey]);

  const everyone = useMemo(() => [...new Set(events.map((e) => e.who))], [events]);
  const shown = events.filter((e) => !hiddenWho.has(e.who));

  // Follow the newest events, unless the person scrolled up to read.
  useEffect(() => {
    const el = list.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [shown.length]);

  const toggle = (who: string) =>
    setHiddenWho((old) => {
      const s = new Set(old);
      if (s.has(who)) s.delete(who);
      else s.add(who);
      return s;
    });

  return (
    <aside className="timeline-panel" aria-label="Timeline" data-testid="timeline-panel">
      <header className="timeline-head">
        <h3>Timeline</h3>
        <div className="timeline-filter" role="group" aria-label="Show events by">
          <button type="button" className={`who-chip${hiddenWho.size === 0 ? ' on' : ''}`} aria-pressed={hiddenWho.size === 0} onClick={() => setHiddenWho(new Set())}>
            Everyone
          </button>
          {everyone.map((w) => (
            <button
              type="button"
              key={w}
              className={`who-chip who-${w === 'person' ? 'person' : w === 'ptydeck' ? 'system' : 'agent'}${hiddenWho.has(w) ? '' : ' on'}`}
              aria-pressed={!hiddenWho.has(w)}
              data-who={w}
              onClick={() => (hiddenWho.size === 0 ? setHiddenWho(new Set(everyone.filter((x) => x !== w))) : toggle(w))}
              title={hiddenWho.size === 0 ? `Only ${whoLabel(w)}` : hiddenWho.has(w) ? `Show ${whoLabel(w)}` : `Hide ${whoLabel(w)}`}
            >
              {whoLabel(w)}
            </button>
          ))}
        </div>
      </header>
      {error ? <p className="timeline-error">{error}</p> : null}
      <ol
        className="timeline-list"
        ref={list}
        onScroll={(ev) => {
          const el = ev.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {groupKeystrokes(shown).map(({ event: e, last, text: typed, count }) => {
          // A run of keystrokes reads as what was typed; picking it shows the screen after the last key.
          const text = typed !== null && count > 1 ? describeEvent({ ...last, text: typed, bytes: 0, truncated: false } as TimelineEvent) : describeEvent(e);
          return (
            <li key={e.seq}>
              <button
                type="button"
                className={`timeline-event tone-${text.tone}${selectedSeq !== null && selectedSeq !== undefined && selectedSeq >= e.seq && selectedSeq <= last.seq ? ' selected' : ''}`}
                data-testid="timeline-event"
                data-kind={e.kind}
                data-who={e.who}
                data-seq={last.seq}
                disabled={!onPick}
                onClick={() => onPick?.(last)}
                title={`${new Date(e.at).toLocaleString()} · ${whoLabel(e.who)}${e.door ? ` via ${e.door}` : ''} · output offset ${e.offset}${onPick ? '\nClick to replay the terminal as it was then' : ''}`}
              >
                <span className="ev-time">{clockTime(e.at)}</span>
                <span className={`ev-who who-${e.who === 'person' ? 'person' : e.who === 'ptydeck' ? 'system' : 'agent'}`}>{whoLabel(e.who)}</span>
                <span className="ev-title">{text.title}</span>
                {text.detail ? <code className="ev-detail">{text.detail}</code> : null}
              </button>
            </li>
          );
        })}
        {shown.length === 0 && !error ? <li className="timeline-empty">{events.length ? 'No events from the people chosen.' : 'Nothing yet.'}</li> : null}
      </ol>
    </aside>
  );
}
