import type { FloorMode, SessionSummary } from '../../../shared/types';
import { FloorText, floorShort, statusOf } from '../sessions/describe';
import { EyeIcon, HandIcon, KeyboardIcon } from './icons';

export function FloorIcon({ floor }: { floor: FloorMode }) {
  return floor === 'watch' ? <EyeIcon /> : floor === 'type' ? <KeyboardIcon /> : <HandIcon />;
}

/** Who may type: a coloured chip, the same colour as the frame around the terminal. */
export function FloorChip({ session, compact = false }: { session: SessionSummary; compact?: boolean }) {
  const floor = session.floor;
  return (
    <span className={`floor-chip floor-${floor}`} data-testid="floor-chip" data-floor={floor} title={FloorText[floor].banner}>
      <FloorIcon floor={floor} />
      {compact ? null : <span>{floorShort(session)}</span>}
    </span>
  );
}

export function StatusDot({ session }: { session: SessionSummary }) {
  const status = statusOf(session);
  return <span className={`status-dot status-${status.kind}${status.bad ? ' bad' : ''}`} aria-hidden="true" />;
}

export function StatusBadge({ session }: { session: SessionSummary }) {
  const status = statusOf(session);
  return (
    <span className={`status-badge status-${status.kind}${status.bad ? ' bad' : ''}`} data-testid="status-badge" data-status={status.kind} data-bad={status.bad}>
      <span className={`status-dot status-${status.kind}${status.bad ? ' bad' : ''}`} aria-hidden="true" />
      {status.label}
    </span>
  );
}

/** Agents the floor refused since the person took it: a count on the tab, the details in its tooltip. */
export function RefusalBadge({ session }: { session: SessionSummary }) {
  if (session.refusals === 0 || session.floor !== 'takeover') return null;
  const who = session.refusedBy.map((r) => `${r.agent} ${r.count}×`).join(', ');
  return (
    <span className="refusal-badge" data-testid="refusal-badge" title={`Refused while you hold the floor: ${who}`}>
      {session.refusals}× refused
    </span>
  );
}
