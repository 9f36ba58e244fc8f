import { useEffect, useState } from 'react';
import type { Link } from '../sessions/session-store';
import { WarningIcon } from './icons';

/** While the events socket is down: what is wrong, when the next try is, and a way to try now. */
export function ConnectionBanner({ link, onRetry }: { link: Link; onRetry(): void }) {
  // Re-render every second while down, for the countdown.
  const [, setTick] = useState(0);
  const down = link.state === 'down';
  useEffect(() => {
    if (!down) return;
    const timer = setInterval(() => setTick((t) => t + 1), 1000);
    return () => clearInterval(timer);
  }, [down]);
  if (link.state !== 'down') return null;
  const seconds = Math.max(0, Math.ceil((link.retryAt - Date.now()) / 1000));
  return (
    <div className="connection-banner" role="alert" data-testid="connection-banner">
      <WarningIcon />
      <strong>{link.reason} — reconnecting…</strong>
      <span className="banner-detail">
        {seconds > 0 ? `Next try in ${seconds} s` : 'Trying now'} (attempt {link.attempt}). The list and terminals below show the last state received.
      </span>
      <button type="button" className="btn btn-small" onClick={onRetry}>
        Retry now
      </button>
    </div>
  );
}
