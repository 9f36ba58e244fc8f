import { useEffect, useRef, useState } from 'react';
import '@xterm/xterm/css/xterm.css';
import type { TimelineEvent } from '../../../shared/timeline';
import { ApiError } from '../api/rest';
import { bufferText } from '../terminal/test-hooks';
import { TimelinePanel } from '../timeline/TimelinePanel';
import { exportCast, timelineApi, type TimelineSource } from '../timeline/timeline-api';
import { castTimeOf, parseCast, type Cast } from './cast';
import { ReplayPlayer, type PlayerState } from './replay-player';
import './replay.css';

export const SPEEDS = [0.5, 1, 2, 4, 8, 16] as const;

/** A moment to show: a timeline event's time. `n` changes on every pick, so picking the same event twice works. */
export interface ReplayJump {
  at: string;
  seq: number | null;
  n: number;
}

interface ReplayViewProps {
  source: TimelineSource;
  /** For the exported file's name and the heading. */
  title: string;
  /** Where to open: a moment, or (null) the end. */
  jump: ReplayJump | null;
  /** Shows the recording's own timeline beside it (a past session); a live session has one already. */
  withTimeline: boolean;
  onClose?(): void;
  closeLabel?: string;
}

const fmt = (secs: number): string => {
  const s = Math.max(0, Math.floor(secs));
  const h = Math.floor(s / 3600);
  const mm = String(Math.floor((s % 3600) / 60)).padStart(h ? 2 : 1, '0');
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
};

/**
 * A recording played back in xterm.js (replay-player.ts): play and pause, speed, a scrubber with a tick
 * at each command, and export of the .cast. Any session, live or closed, at any moment of its history.
 */
export function ReplayView({ source, title, jump, withTimeline, onClose, closeLabel = 'Back to live' }: ReplayViewProps) {
  const host = useRef<HTMLDivElement>(null);
  const player = useRef<ReplayPlayer | null>(null);
  const [cast, setCast] = useState<Cast | null>(null);
  const [state, setState] = useState<PlayerState>({ time: 0, duration: 0, playing: false, speed: 1 });
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<number | null>(jump?.seq ?? null);
  const [reloads, setReloads] = useState(0);
  const sourceKey = source.kind === 'session' ? `s:${source.id}` : `r:${source.key}`;

  // Load (or reload) the recording.
  useEffect(() => {
    let cancelled = false;
    setError(null);
    timelineApi
      .cast(source)
      .then((text) => {
        if (!cancelled) setCast(parseCast(text));
      })
      .catch((err) => {
        if (!cancelled) setError(err instanceof ApiError ? err.message : String(err));
      });
    return () => {
      cancelled = true;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [sourceKey, reloads]);

  // One player per view; a reloaded recording keeps the position.
  useEffect(() => {
    if (!cast || !host.current) return;
    if (player.current) {
      player.current.update(cast);
      return;
    }
    const p = new ReplayPlayer(host.current, cast, setState);
    player.current = p;
    void p.seek(jump ? castTimeOf(cast, jump.at) : cast.duration);
    window.__ptydeckReplayText = () => (player.current ? bufferText(player.current.term) : null);
    window.__ptydeckReplayState = () => player.current?.state ?? null;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [cast]);

  useEffect(
    () => () => {
      player.current?.dispose();
      player.current = null;
      window.__ptydeckReplayText = undefined;
      window.__ptydeckReplayState = undefined;
    },
    [],
  );

  // A pick in the timeline beside: jump there (a moment past the end of what we have means: fetch again).
  useEffect(() => {
    if (!jump || !cast || !player.current) return;
    setSelected(jump.seq);
    const t = castTimeOf(cast, jump.at);
    player.current.pause();
    if (t > cast.duration && source.kind === 'session') setReloads((n) => n + 1);
    void player.current.seek(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [jump?.n]);

  const pick = (e: TimelineEvent) => {
    setSelected(e.seq);
    if (!cast || !player.current) return;
    player.current.pause();
    void player.current.seek(castTimeOf(cast, e.at));
  };

  const run = cast?.header.ptydeck?.run;
  return (
    <div className="replay" data-testid="replay">
      <div className="replay-main">
        <div className="replay-bar" role="toolbar" aria-label="Replay">
          <span className="replay-title">
            Replay <strong>{title}</strong>
          </span>
          <button
            type="button"
            className="btn btn-small btn-primary replay-play"
            aria-label={state.playing ? 'Pause' : 'Play'}
            disabled={!cast}
            onClick={() => (state.playing ? player.current?.pause() : player.current?.play())}
          >
            {state.playing ? '❚❚ Pause' : '▶ Play'}
          </button>
          <label className="replay-speed">
            Speed
            <select aria-label="Speed" value={state.speed} onChange={(e) => player.current?.setSpeed(Number(e.target.value))}>
              {SPEEDS.map((s) => (
                <option key={s} value={s}>
                  {s}×
                </option>
              ))}
            </select>
          </label>
          <span className="replay-time" data-testid="replay-time">
            {fmt(state.time)} / {fmt(state.duration)}
          </span>
          <span className="spacer" />
          {source.kind === 'session' ? (
            <button type="button" className="btn btn-small btn-quiet" onClick={() => setReloads((n) => n + 1)} title="Fetch what was recorded since">
              Refresh
            </button>
          ) : null}
          <button type="button" className="btn btn-small btn-quiet" disabled={!cast} onClick={() => void exportCast(source, `${title}${run ? `-${run}` : ''}`).catch((err) => setError(String(err)))}>
            Export .cast
          </button>
          {onClose ? (
            <button type="button" className="btn btn-small" onClick={onClose}>
              {closeLabel}
            </button>
          ) : null}
        </div>
        <div className="replay-scrub">
          <input
            type="range"
            aria-label="Position"
            min={0}
            max={Math.max(state.duration, 0.001)}
            step={0.01}
            value={state.time}
            disabled={!cast}
            onChange={(e) => {
              setSelected(null);
              void player.current?.seek(Number(e.target.value));
            }}
          />
          <div className="replay-markers" aria-hidden="true">
            {cast && cast.duration > 0
              ? cast.markers.map((m, i) => <span key={i} className="replay-marker" style={{ left: `${(100 * m.t) / cast.duration}%` }} title={m.data} />)
              : null}
          </div>
        </div>
        {error ? <p className="replay-error">{error}</p> : null}
        <div className="replay-screen">
          <div className="replay-host" ref={host} data-testid="replay-terminal" />
        </div>
      </div>
      {withTimeline && run ? <TimelinePanel source={{ kind: 'recording', key: run }} live={false} selectedSeq={selected} onPick={pick} /> : null}
    </div>
  );
}
