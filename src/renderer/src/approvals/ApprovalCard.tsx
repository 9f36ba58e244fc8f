import { useEffect, useRef, useState } from 'react';
import type { Approval } from '../../../shared/approvals';
import { ago, splitAtMatch, timeLeft, whyItWaits } from './describe';

export interface CardActions {
  approve(a: Approval): Promise<void>;
  deny(a: Approval, reason: string): Promise<void>;
  alwaysAllow(a: Approval): Promise<void>;
  takeOver(a: Approval): Promise<void>;
  openSession(id: string): void;
}

/**
 * One command waiting for the person: who wants to run it, where, the whole command with what the
 * rule matched marked, and the four answers. Deny asks for a reason first (the agent reads it).
 */
export function ApprovalCard({ approval: a, actions, now }: { approval: Approval; actions: CardActions; now: number }) {
  const [denying, setDenying] = useState(false);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const reasonInput = useRef<HTMLInputElement>(null);
  const parts = splitAtMatch(a);
  useEffect(() => {
    if (denying) reasonInput.current?.focus();
  }, [denying]);

  const act = async (run: () => Promise<void>) => {
    setBusy(true);
    try {
      await run();
    } finally {
      setBusy(false);
    }
  };

  return (
    <article className="approval-card" data-testid="approval-card" data-approval-id={a.id} data-session-id={a.session_id} aria-label={`${a.agent} wants to run ${a.command}`}>
      <header className="approval-head">
        <span className="approval-agent">{a.agent}</span>
        <span className="approval-sep">in</span>
        <button type="button" className="approval-session" onClick={() => actions.openSession(a.session_id)} title="Show this terminal">
          {a.session_id}
        </button>
        <span className="spacer" />
        <span className="approval-when" title={`Asked at ${new Date(a.requested_at).toLocaleTimeString()} through ${a.door}`}>
          {ago(a.requested_at, now)}
        </span>
      </header>
      <div className="approval-cwd mono" title="Working directory">
        {a.cwd}
      </div>
      <pre className="approval-command" data-testid="approval-command">
        <span className="approval-prompt">$ </span>
        {parts.before}
        {parts.match ? <mark data-testid="approval-match">{parts.match}</mark> : null}
        {parts.after}
      </pre>
      {a.scope === 'command' ? (
        <div className="approval-line">
          runs inside <code>{a.line}</code>
        </div>
      ) : null}
      <div className="approval-why">
        <span>{whyItWaits(a)}</span>
        <span className="spacer" />
        <span className="approval-expiry" title="Denied with “no decision in time” when this runs out">
          denied in {timeLeft(a.expires_at, now)}
        </span>
      </div>
      {denying ? (
        <form
          className="approval-deny-form"
          onSubmit={(e) => {
            e.preventDefault();
            void act(() => actions.deny(a, reason));
          }}
        >
          <input ref={reasonInput} className="approval-reason" aria-label="Reason for denying" placeholder="Why not? (the agent reads this)" value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} />
          <button type="submit" className="btn btn-small btn-danger" disabled={busy}>
            Deny
          </button>
          <button type="button" className="btn btn-small btn-quiet" onClick={() => setDenying(false)} disabled={busy}>
            Cancel
          </button>
        </form>
      ) : (
        <div className="approval-actions">
          <button type="button" className="btn btn-small btn-approve" disabled={busy} onClick={() => void act(() => actions.approve(a))}>
            Approve
          </button>
          <button type="button" className="btn btn-small btn-danger-outline" disabled={busy} onClick={() => setDenying(true)}>
            Deny…
          </button>
          <button type="button" className="btn btn-small" disabled={busy} onClick={() => void act(() => actions.alwaysAllow(a))} title={`Approve, and from now on let ${a.agent} run exactly this command without asking`}>
            Always allow
          </button>
          <button type="button" className="btn btn-small btn-quiet" disabled={busy} onClick={() => void act(() => actions.takeOver(a))} title="Deny it and take over the terminal yourself">
            Take over
          </button>
        </div>
      )}
    </article>
  );
}
