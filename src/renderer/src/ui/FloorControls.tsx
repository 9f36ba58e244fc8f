import type { ComponentType } from 'react';
import type { FloorMode, SessionSummary } from '../../../shared/types';
import { isOwnSession } from '../sessions/describe';
import { ArmedButton } from './ArmedButton';
import { EyeIcon, FitIcon, HandIcon, InterruptIcon, KeyboardIcon, ReleaseIcon } from './icons';

interface FloorControlsProps {
  session: SessionSummary;
  /** A floor request is on its way. */
  busy: boolean;
  /** The server cannot be reached: no request would get through. */
  offline: boolean;
  onFloor(mode: FloorMode): void;
  onRelease(): void;
  onInterrupt(): void;
  onFit(): void;
}

const AGENT_MODES: { mode: FloorMode; label: string; hint: string; icon: ComponentType }[] = [
  { mode: 'watch', label: 'Watch', hint: 'Read only: the agent types alone', icon: EyeIcon },
  { mode: 'type', label: 'Type', hint: "Your keys go in beside the agent's", icon: KeyboardIcon },
  { mode: 'takeover', label: 'Take over', hint: 'Hold the floor: agents are refused until you release', icon: HandIcon },
];

/** The person's own terminal has no agent: read only, or theirs to type in. */
const OWN_MODES: typeof AGENT_MODES = [
  { mode: 'watch', label: 'Read only', hint: 'Keys typed in this tab are not sent', icon: EyeIcon },
  { mode: 'type', label: 'Type', hint: 'Your keys go in', icon: KeyboardIcon },
];

/**
 * Watch / Type / Take over as one segmented control, then Release; "Fit to my window" while the person
 * may type in an agent's terminal; and, set apart, Interrupt, which asks once more when it would stop
 * an agent's running command.
 */
export function FloorControls({ session, busy, offline, onFloor, onRelease, onInterrupt, onFit }: FloorControlsProps) {
  const ended = session.shellState === 'exited';
  const frozen = ended || busy || offline;
  const own = isOwnSession(session);
  const running = session.shellState === 'busy' ? (session.command?.command ?? 'the running program') : null;
  return (
    <div className="floor-controls">
      <div className="segmented" role="group" aria-label="Floor">
        {/* An aio remote has no floor to hold (remotes/): Watch and Type only. */}
        {(own ? OWN_MODES : AGENT_MODES).filter((m) => m.mode !== 'takeover' || session.remote?.floorControl !== false).map(({ mode, label, hint, icon: Icon }) => (
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
      {own ? null : (
        <button type="button" className="btn" disabled={frozen || session.floor === 'watch'} title="Hand the floor back to the agent (and its terminal size) and watch" onClick={onRelease}>
          <ReleaseIcon />
          Release
        </button>
      )}
      {!own && session.floor !== 'watch' && !ended ? (
        <button type="button" className="btn btn-quiet" disabled={offline} title="Resize the agent's terminal to this pane; its own size comes back when you release" onClick={onFit}>
          <FitIcon />
          Fit to my window
        </button>
      ) : null}
      <span className="controls-gap" aria-hidden="true" />
      <ArmedButton
        needsConfirm={!own && running !== null}
        className="btn-danger-outline"
        armedClassName="btn-danger"
        disabled={ended || offline}
        onConfirm={onInterrupt}
        title="Send Ctrl-C to the terminal, as you, whoever holds the floor"
        armedTitle={`Click again to send Ctrl-C to ${running}`}
        label={
          <>
            <InterruptIcon />
            Interrupt
          </>
        }
        armedLabel={
          <>
            <InterruptIcon />
            <span className="armed-text">Stop {running}?</span>
          </>
        }
        testId="interrupt"
      />
    </div>
  );
}
