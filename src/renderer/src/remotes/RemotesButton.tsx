import { useState } from 'react';
import type { RemoteStatus } from '../../../shared/types';
import { RemotesDialog } from './RemotesDialog';
import './remotes.css';

/** The top bar's way to the remotes: says at a glance when one of them is not reachable. */
export function RemotesButton({ remotes, disabled }: { remotes: readonly RemoteStatus[]; disabled: boolean }) {
  const [open, setOpen] = useState(false);
  const down = remotes.filter((r) => r.state === 'offline' || r.state === 'unauthorized').length;
  return (
    <>
      <button type="button" className="btn remotes-button" onClick={() => setOpen(true)} disabled={disabled} data-testid="remotes-button" title="Other machines and sandboxes this deck shows">
        Remotes{remotes.length ? ` (${remotes.length})` : ''}
        {down ? <span className="remotes-problem">{down} down</span> : null}
      </button>
      {open ? <RemotesDialog remotes={remotes} onClose={() => setOpen(false)} /> : null}
    </>
  );
}
