import type { FloorMode, SessionSummary } from '../../../shared/types';
import { FloorText, statusOf } from '../sessions/describe';
import { EyeIcon, HandIcon, KeyboardIcon } from './icons';

export function FloorIcon({ floor }: { floor: FloorMode }) {
  return floor === 'watch' ? <EyeIcon /> : floor === 'type' ? <KeyboardIcon /> : <HandIcon />;
}

/** Who may type: a coloured chip, the same colour as the frame around the terminal. */
export function FloorChip({ floor, compact = false }: { floor: FloorMode; compact?: boolean }) {
  return (
    <span className={`floor-chip floor-${floor}`} data-testid="floor-chip" data-floor={floor} title={FloorText[floor].banner}>
      <FloorIcon floor={floor} />
      {compact ? null : <span>{FloorText[floor].short}</span>}
    </span>
  );
}

export function StatusDot({ session }: { session: SessionSummary }) {
  return <span className={`status-dot status-${statusOf(session).kind}`} aria-hidden="true" />;
}

export function StatusBadge({ session }: { session: SessionSummary }) {
  const status = statusOf(session);
  return (
    <span className={`status-badge status-${status.kind}`} data-testid="status-badge" data-status={status.kind}>
      <span className={`status-dot status-${status.kind}`} aria-hidden="true" />
      {status.label}
    </span>
  );
}
