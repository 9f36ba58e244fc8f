import { useRef, type KeyboardEvent } from 'react';
import type { PauseState, RemoteStatus, SessionSummary } from '../../../shared/types';
import { AgentActions } from '../deck/AgentActions';
import { groupByHost } from '../remotes/grouping';
import { HostSection } from '../remotes/HostSection';
import { AioNote } from '../remotes/RemoteNotes';
import { ADMIN_OWNER, displayTitle, floorShort, statusOf, tabTooltip } from '../sessions/describe';
import { FloorChip, RefusalBadge, StatusDot } from './badges';
import { MiddleEllipsis } from './MiddleEllipsis';

export const tabDomId = (id: string): string => `tab-${id}`;
export const PANEL_ID = 'session-panel';

interface SidebarProps {
  sessions: Iterable<SessionSummary>;
  selected: string | null;
  onSelect(id: string): void;
  paused: PauseState;
  agentTokens: ReadonlySet<string>;
  online: boolean;
  onTokensChanged(): void;
  /** Other servers this deck shows: their sessions are grouped by host, then by agent. */
  remotes?: readonly RemoteStatus[];
  onRetryRemote?(name: string): void;
  /** Commands waiting for the person's approval, per session (approvals/). */
  approvalsBySession?: ReadonlyMap<string, number>;
}

/**
 * Every session as a tab, grouped by host (when there are remotes), then by the agent that owns it.
 * Arrow keys move between tabs. This deck's own agents have their deck actions (pause, interrupt all,
 * revoke); a remote's agents are acted on at their own server.
 */
export function Sidebar({ sessions, selected, onSelect, paused, agentTokens, online, onTokensChanged, remotes = [], onRetryRemote, approvalsBySession }: SidebarProps) {
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
    <nav className="sidebar" aria-label="Terminals" ref={nav} onKeyDown={onKeyDown} data-testid="sidebar">
      {hosts.map((h) => (
        <HostSection key={h.host ?? ''} section={h} showHeader={hosts.length > 1 || h.host !== null} onRetry={onRetryRemote}>
          {h.groups.map((g) => {
            const local = h.host === null;
            const isPaused = local && g.owner !== ADMIN_OWNER && (paused.all || paused.agents.includes(g.owner));
            return (
              <section className="owner-group" key={g.owner} data-testid="owner-group" data-owner={g.owner} data-paused={isPaused}>
                <div className="owner-head">
                  <h2 className="owner-label">
                    <span>{g.label}</span>
                    <span className="owner-count">{g.sessions.length}</span>
                    {isPaused ? <span className="paused-tag">paused</span> : null}
                  </h2>
                  {!local || g.owner === ADMIN_OWNER ? null : (
                    <AgentActions agent={g.owner} sessions={g.sessions} paused={isPaused} hasToken={agentTokens.has(g.owner)} online={online} onTokensChanged={onTokensChanged} compact />
                  )}
                </div>
                <div role="tablist" aria-label={g.label} aria-orientation="vertical" className="tab-list">
                  {g.sessions.map((s) => (
                    <SessionTab key={s.id} session={s} selected={s.id === selected} onSelect={onSelect} approvals={approvalsBySession?.get(s.id) ?? 0} />
                  ))}
                </div>
              </section>
            );
          })}
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
  const title = displayTitle(s);
  return (
    <button
      type="button"
      role="tab"
      id={tabDomId(s.id)}
      aria-selected={selected}
      aria-controls={selected ? PANEL_ID : undefined}
      aria-label={title}
      aria-describedby={statusId}
      tabIndex={selected ? 0 : -1}
      className={`session-tab status-${status.kind}${status.bad ? ' bad' : ''}${selected ? ' selected' : ''}`}
      data-session-id={s.id}
      data-status={status.kind}
      data-floor={s.floor}
      data-approval={approvals ? 'waiting' : undefined}
      onClick={() => onSelect(s.id)}
      title={tabTooltip(s)}
    >
      <span className="tab-top">
        <StatusDot session={s} />
        <MiddleEllipsis text={title} className="tab-title" testId="tab-title" />
        <AioNote session={s} compact />
        <FloorChip session={s} compact />
      </span>
      <span className="tab-bottom" id={statusId}>
        <RefusalBadge session={s} />
        <span className={`tab-status${approvals ? ' tab-status-approval' : ''}`}>{label}</span>
        {s.waitingForInput && s.prompt ? (
          <code className="tab-command tab-prompt" data-testid="tab-prompt">
            {s.prompt}
          </code>
        ) : status.command && status.command !== s.title ? (
          <code className="tab-command">{status.command}</code>
        ) : null}
        <span className="visually-hidden">, {floorShort(s)}</span>
      </span>
    </button>
  );
}
