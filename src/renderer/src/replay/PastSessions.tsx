import { useEffect, useState } from 'react';
import type { RecordingInfo } from '../../../shared/timeline';
import { ApiError } from '../api/rest';
import { exportCast, timelineApi } from '../timeline/timeline-api';
import './replay.css';

interface PastSessionsProps {
  onOpen(r: RecordingInfo): void;
}

const size = (bytes: number): string => (bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`);
const when = (iso: string | null): string => (iso ? new Date(iso).toLocaleString([], { dateStyle: 'short', timeStyle: 'medium', hour12: false }) : '');

/** Every kept recording, closed sessions' included: replay one, export it, or delete it. */
export function PastSessions({ onOpen }: PastSessionsProps) {
  const [list, setList] = useState<RecordingInfo[] | null>(null);
  const [enabled, setEnabled] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [reloads, setReloads] = useState(0);

  useEffect(() => {
    let cancelled = false;
    timelineApi
      .recordings()
      .then((r) => {
        if (cancelled) return;
        setList(r.recordings);
        setEnabled(r.recording);
      })
      .catch((err) => !cancelled && setError(err instanceof ApiError ? err.message : String(err)));
    return () => {
      cancelled = true;
    };
  }, [reloads]);

  const remove = async (r: RecordingInfo) => {
    try {
      await timelineApi.deleteRecording(r.key);
      setReloads((n) => n + 1);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
  };

  return (
    <section className="past-sessions" data-testid="past-sessions" aria-label="Recordings">
      <h2>Recordings</h2>
      {!enabled ? <p className="empty">Recordings are off on this server (PTYDECK_RECORDING=off).</p> : null}
      {error ? <p className="replay-error">{error}</p> : null}
      {list && list.length === 0 ? <p className="empty">No recordings yet: every terminal is recorded from the moment it opens.</p> : null}
      {list && list.length ? (
        <table>
          <thead>
            <tr>
              <th>Session</th>
              <th>Owner</th>
              <th>Started</th>
              <th>Ended</th>
              <th>Size</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((r) => (
              <tr key={r.key} data-testid="recording-row" data-session-id={r.session} data-key={r.key}>
                <td className="mono">{r.session}</td>
                <td>{r.owner === 'admin' ? 'You' : r.owner}</td>
                <td>{when(r.startedAt)}</td>
                <td>{r.live ? <span className="live-tag">live</span> : when(r.endedAt)}</td>
                <td>
                  {size(r.bytes)}
                  {r.stopped ? <span title={r.stopped}> (stopped)</span> : null}
                </td>
                <td className="actions">
                  <button type="button" className="btn btn-small btn-primary" onClick={() => onOpen(r)}>
                    Replay
                  </button>
                  <button type="button" className="btn btn-small btn-quiet" onClick={() => void exportCast({ kind: 'recording', key: r.key }, `${r.session}-${r.key}`)}>
                    Export
                  </button>
                  {r.live ? null : (
                    <button type="button" className="btn btn-small btn-quiet" onClick={() => void remove(r)} title="Delete this recording (its timeline stays)">
                      Delete
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
