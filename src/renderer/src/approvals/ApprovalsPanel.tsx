import './approvals.css';
import { useEffect, useState } from 'react';
import type { Approval } from '../../../shared/approvals';
import { ApprovalCard, type CardActions } from './ApprovalCard';

/**
 * The queue: every command waiting for the person, across all sessions, oldest first (it expires
 * first). A self-contained panel, so the deck's attention queue can host it as it is.
 */
export function ApprovalsPanel({ approvals, actions, onClose, onEditPolicy }: { approvals: readonly Approval[]; actions: CardActions; onClose(): void; onEditPolicy(): void }) {
  const now = useNow();
  const ordered = [...approvals].sort((a, b) => a.requested_at.localeCompare(b.requested_at));
  return (
    <aside className="approvals-panel" aria-label="Commands waiting for approval" data-testid="approvals-panel">
      <header className="approvals-panel-head">
        <h2>
          Approvals <span className="approvals-count" data-testid="approvals-count">{approvals.length}</span>
        </h2>
        <span className="spacer" />
        <button type="button" className="btn btn-small btn-quiet" onClick={onEditPolicy}>
          Policy…
        </button>
        <button type="button" className="icon-btn" aria-label="Hide approvals" title="Hide" onClick={onClose}>
          ×
        </button>
      </header>
      <div className="approvals-list">
        {ordered.length === 0 ? (
          <p className="approvals-empty">Nothing waits for you. Agents’ commands that a rule marks “ask” appear here before they run.</p>
        ) : (
          ordered.map((a) => <ApprovalCard key={a.id} approval={a} actions={actions} now={now} />)
        )}
      </div>
    </aside>
  );
}

/** The time, once a second: cards show how long ago a command was asked about and when it expires. */
function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return now;
}

/** Above a session's terminal: what of it waits for approval, with a way to the card. */
export function SessionApprovalBanner({ approvals, onShow }: { approvals: readonly Approval[]; onShow(): void }) {
  if (approvals.length === 0) return null;
  const first = approvals[0];
  return (
    <div className="approval-banner" role="status" data-testid="approval-banner">
      <strong>Waits for your approval:</strong>
      <code className="approval-banner-command">{first.command}</code>
      {approvals.length > 1 ? <span>and {approvals.length - 1} more</span> : null}
      <span className="spacer" />
      <button type="button" className="btn btn-small" onClick={onShow}>
        Review
      </button>
    </div>
  );
}
