import { useRef, type KeyboardEvent } from 'react';
import type { PauseState, SessionSummary } from '../../../shared/types';
import { AgentActions } from '../deck/AgentActions';
import { ADMIN_OWNER, displayTitle, floorShort, groupByOwner, statusOf, tabTooltip } from '../sessions/describe';
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
}

/** Every session as a tab, grouped by the agent that owns it. Arrow keys move between tabs. */
export function Sidebar({ sessions, selected, onSelect, paused, agentTokens, online, onTokensChanged }: SidebarProps) {
  const groups = groupByOwner(sessions);
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
      {groups.map((g) => {
        const isPaused = g.owner !== ADMIN_OWNER && (paused.all || paused.agents.includes(g.owner));
        return (
          <section className="owner-group" key={g.owner} data-testid="owner-group" data-owner={g.owner} data-paused={isPaused}>
            <div className="owner-head">
              <h2 className="owner-label">
                <span>{g.label}</span>
                <span className="owner-count">{g.sessions.length}</span>
                {isPaused ? <span className="paused-tag">paused</span> : null}
              </h2>
              {g.owner === ADMIN_OWNER ? null : (
                <AgentActions agent={g.owner} sessions={g.sessions} paused={isPaused} hasToken={agentTokens.has(g.owner)} online={online} onTokensChanged={onTokensChanged} compact />
              )}
            </div>
            <div role="tablist" aria-label={g.label} aria-orientation="vertical" className="tab-list">
              {g.sessions.map((s) => (
                <SessionTab key={s.id} session={s} selected={s.id === selected} onSelect={onSelect} />
              ))}
            </div>
          </section>
        );
      })}
    </nav>
  );
}

function SessionTab({ session: s, selected, onSelect }: { session: SessionSummary; selected: boolean; onSelect(id: string): void }) {
  const status = statusOf(s);
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
      onClick={() => onSelect(s.id)}
      title={tabTooltip(s)}
    >
      <span className="tab-top">
        <StatusDot session={s} />
        <MiddleEllipsis text={title} className="tab-title" testId="tab-title" />
        <FloorChip session={s} compact />
      </span>
      <span className="tab-bottom" id={statusId}>
        <RefusalBadge session={s} />
        <span className="tab-status">{status.label}</span>
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
