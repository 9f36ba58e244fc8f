import type { SessionSummary } from '../../../shared/types';
import { aioNote } from './grouping';
import './remotes.css';

/** Where a remote session lives, for its header. */
export function HostTag({ session }: { session: SessionSummary }) {
  if (!session.host) return null;
  return (
    <span className="host-tag" data-testid="host-tag" title={`On remote ${session.host} (${session.remote?.kind ?? 'ptydeck'}), id there: ${session.remote?.id ?? ''}`}>
      {session.host}
    </span>
  );
}

/** What the deck can and cannot do with an aio session, said on its tab and above its terminal. */
export function AioNote({ session, compact = false }: { session: SessionSummary; compact?: boolean }) {
  const note = aioNote(session);
  if (!note) return null;
  const polling = session.remote?.watch === 'polling';
  if (compact) return polling ? <span className="tab-note" title={note} data-testid="tab-polling">polled</span> : null;
  return (
    <div className={`aio-note${polling ? ' aio-polling' : ''}`} data-testid="aio-note" data-watch={session.remote?.watch ?? ''}>
      {note}
    </div>
  );
}
