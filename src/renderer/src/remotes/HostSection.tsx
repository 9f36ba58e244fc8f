import type { ReactNode } from 'react';
import type { RemoteStatus } from '../../../shared/types';
import { RemoteStateText, type HostSection as Section } from './grouping';
import './remotes.css';

/**
 * A host's part of the sidebar: its name and state (with the reason when it is not online, and a way to
 * retry now), then its agents' groups. The deck's own section has a header only when remotes exist.
 */
export function HostSection({ section, showHeader, onRetry, children }: { section: Section; showHeader: boolean; onRetry?(name: string): void; children: ReactNode }) {
  const { host, status } = section;
  const state = status?.state ?? (host ? 'connecting' : 'online');
  return (
    <section className={`host-group host-${state}`} data-testid="host-group" data-host={host ?? 'local'} data-state={state}>
      {showHeader ? (
        <header className="host-label">
          <div className="host-title">
            <span className={`host-dot host-dot-${state}`} aria-hidden="true" />
            <span className="host-name">{host ?? 'This machine'}</span>
            {status ? <span className="host-kind">{status.kind}</span> : null}
            {host ? (
              <span className={`host-state host-state-${state}`} data-testid="host-state">
                {RemoteStateText[state]}
              </span>
            ) : null}
          </div>
          {status && status.state !== 'online' && status.reason ? <HostProblem status={status} onRetry={onRetry} /> : null}
        </header>
      ) : null}
      {children}
      {host && section.groups.length === 0 && status?.state === 'online' ? <p className="host-empty">No terminals there yet.</p> : null}
    </section>
  );
}

function HostProblem({ status, onRetry }: { status: RemoteStatus; onRetry?(name: string): void }) {
  return (
    <div className="host-problem" role="status" data-testid="host-reason">
      <span className="host-reason">{status.reason}</span>
      {onRetry && status.state !== 'connecting' ? (
        <button type="button" className="btn btn-small" onClick={() => onRetry(status.name)}>
          Retry now
        </button>
      ) : null}
    </div>
  );
}
