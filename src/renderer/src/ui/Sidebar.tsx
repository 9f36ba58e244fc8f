import { useRef, type KeyboardEvent } from 'react';
import type { RemoteStatus, SessionSummary } from '../../../shared/types';
import { groupByHost } from '../remotes/grouping';
import { HostSection } from '../remotes/HostSection';
import { AioNote } from '../remotes/RemoteNotes';
import { FloorText, shortCwd, shortId, statusOf } from '../sessions/describe';
import { FloorChip, StatusDot } from './badges';

export const tabDomId = (id: string): string => `tab-${id}`;
export const PANEL_ID = 'session-panel';

interface SidebarProps {
  sessions: Iterable<SessionSummary>;
  selected: string | null;
  onSelect(id: string): void;
  /** Other servers this deck shows: their sessions are grouped by host, then by agent. */
  remotes?: readonly RemoteStatus[];
  onRetryRemote?(name: string): void;
  /** Commands waiting for the person's approval, per session (approvals/). */
  approvalsBySession?: ReadonlyMap<string, number>;
}

/** Every session as a tab, grouped by host (when there are remotes), then by the agent that owns it. Arrow keys move between tabs. */
export function Sidebar({ sessions, selected, onSelect, remotes = [], onRetryRemote, approvalsBySession }: SidebarProps) {
  const hosts = groupByHost(sessions, remotes);
  const nav = useRef<HTMLElement>(null);
  const onKeyDown = (ev: KeyboardEvent) => {
    if (!['ArrowDown', 'ArrowUp', 'Home', 'End'].includes(ev.key)) return;
    const tabs = [...(nav.current?.querySelectorAll<HTMLElement>('[role="tab"]') ?? [])];
    const at = tabs.findIndex((t) => t === document.activeElement);
    if (at < 0) return;
    ev.preventDefault();
    const next = ev.key === 'Home' ? 0 : ev.key === 'End' ? tabs.length - 1 : (at + (ev.key === 'ArrowDown' ? 1 : -1) + tabs.length) % tabs.length;
    tabs[next].focus();
    const id = tabs[next].dataset.sessionId;
    if (id) onSelect(id);
  };
  return (
    <nav className="sidebar" aria-label="Terminals" ref={nav} onKeyDown={onKeyDown}>
      {hosts.map((h) => (
        <HostSection key={h.host ?? ''} section={h} showHeader={hosts.length > 1 || h.host !== null} onRetry={onRetryRemote}>
          {h.groups.map((g) => (
            <section className="owner-group" key={g.owner} data-testid="owner-group" data-owner={g.owner}>
              <h2 className="owner-label">
                <span>{g.label}</span>
                <span className="owner-count">{g.sessions.length}</span>
              </h2>
              <div role="tablist" aria-label={g.label} aria-orientation="vertical" className="tab-list">
                {g.sessions.map((s) => (
                  <SessionTab key={s.id} session={s} selected={s.id === selected} onSelect={onSelect} approvals={approvalsBySession?.get(s.id) ?? 0} />
                ))}
              </div>
            </section>
          ))}
        </HostSection>
      ))}
    </nav>
  );
}

function SessionTab({ session: s, selected, onSelect, approvals }: { session: SessionSummary; selected: boolean; onSelect(id: string): void; approvals: number }) {
  const status = statusOf(s);
  // A command held for the person outranks every other state: nothing moves until they decide.
  const label = approvals ? 'waits for approval' : status.label;
  const statusId = `${tabDomId(s.id)}-status`;
  return (
    <button
      type="button"
      role="tab"
      id={tabDomId(s.id)}
      aria-selected={selected}
      aria-controls={selected ? PANEL_ID : undefined}
      aria-label={s.id}
      aria-describedby={statusId}
      tabIndex={selected ? 0 : -1}
      className={`session-tab status-${status.kind}${selected ? ' selected' : ''}`}
      data-session-id={s.id}
      data-status={status.kind}
      data-floor={s.floor}
      data-approval={approvals ? 'waiting' : undefined}
      onClick={() => onSelect(s.id)}
      title={`${s.id}\n${s.cwd}`}
    >
      <span className="tab-top">
        <StatusDot session={s} />
        <span className="tab-id">{shortId(s.remote?.id ?? s.id)}</span>
        <span className="tab-cwd">{shortCwd(s.cwd)}</span>
        <AioNote session={s} compact />
        <FloorChip floor={s.floor} compact />
      </span>
      <span className="tab-bottom" id={statusId}>
        <span className={`tab-status${approvals ? ' tab-status-approval' : ''}`}>{label}</span>
        {status.command ? <code className="tab-command">{status.command}</code> : null}
        <span className="visually-hidden">, {FloorText[s.floor].short}</span>
      </span>
    </button>
  );
}
