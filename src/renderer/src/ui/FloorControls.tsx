import type { ComponentType } from 'react';
import type { FloorMode, SessionSummary } from '../../../shared/types';
import { HandIcon, EyeIcon, InterruptIcon, KeyboardIcon, ReleaseIcon } from './icons';

interface FloorControlsProps {
  session: SessionSummary;
  /** A floor request is on its way. */
  busy: boolean;
  /** The server cannot be reached: no request would get through. */
  offline: boolean;
  onFloor(mode: FloorMode): void;
  onRelease(): void;
  onInterrupt(): void;
}

const MODES: { mode: FloorMode; label: string; hint: string; icon: ComponentType }[] = [
  { mode: 'watch', label: 'Watch', hint: 'Read only: the agent types alone', icon: EyeIcon },
  { mode: 'type', label: 'Type', hint: "Your keys go in beside the agent's", icon: KeyboardIcon },
  { mode: 'takeover', label: 'Take over', hint: 'Hold the floor: agents are refused until you release', icon: HandIcon },
];

/** Watch / Type / Take over as one segmented control, then Release and the always-available Interrupt. */
export function FloorControls({ session, busy, offline, onFloor, onRelease, onInterrupt }: FloorControlsProps) {
  const ended = session.shellState === 'exited';
  const frozen = ended || busy || offline;
  return (
    <div className="floor-controls">
      <div className="segmented" role="group" aria-label="Floor">
        {/* An aio remote has no floor to hold (remotes/): Watch and Type only. */}
        {MODES.filter((m) => m.mode !== 'takeover' || session.remote?.floorControl !== false).map(({ mode, label, hint, icon: Icon }) => (
          <button
            key={mode}
            type="button"
            className={`seg floor-${mode}${session.floor === mode ? ' active' : ''}`}
            aria-pressed={session.floor === mode}
            disabled={frozen}
            title={hint}
            onClick={() => onFloor(mode)}
          >
            <Icon />
            {label}
          </button>
        ))}
      </div>
      <button type="button" className="btn" disabled={frozen || session.floor === 'watch'} title="Hand the floor back to the agent and watch" onClick={onRelease}>
        <ReleaseIcon />
        Release
      </button>
      <button type="button" className="btn btn-danger-outline" disabled={ended || offline} title="Send Ctrl-C to the terminal, whoever holds the floor" onClick={onInterrupt}>
        <InterruptIcon />
        Interrupt
      </button>
    </div>
  );
}
