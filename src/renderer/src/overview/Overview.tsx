import { memo, useCallback, useEffect, useMemo, useRef, useSyncExternalStore } from 'react';
import type { PauseState, SessionSummary } from '../../../shared/types';
import { AgentActions } from '../deck/AgentActions';
import type { DeckStore } from '../deck/deck-store';
import { ADMIN_OWNER, displayTitle, groupByOwner, shortDuration, statusOf, tabTooltip } from '../sessions/describe';
import { FloorChip, RefusalBadge, StatusBadge } from '../ui/badges';
import { MiddleEllipsis } from '../ui/MiddleEllipsis';
import { useNow } from '../ui/use-now';
import { GlanceScreen } from './GlanceScreen';

interface OverviewProps {
  sessions: SessionSummary[];
  deck: DeckStore;
  paused: PauseState;
  agentTokens: ReadonlySet<string>;
  online: boolean;
  onOpen(id: string): void;
  onTokensChanged(): void;
}

export const OverviewConstants = {
  /** Cards this close to the visible area are glanced too, so scrolling shows live screens at once. */
  PrefetchMargin: '300px',
} as const;

/** Which cards are on screen: only those are glanced (the server renders, the page paints, for nothing else). */
function useVisibleCards(deck: DeckStore, ids: string[]): (el: HTMLElement, id: string) => () => void {
  const visible = useRef(new Set<string>());
  const elements = useRef(new Map<Element, string>());
  const observer = useMemo(
    () =>
      new IntersectionObserver(
        (entries) => {
          for (const e of entries) {
            const id = elements.current.get(e.target);
            if (!id) continue;
            if (e.isIntersecting) visible.current.add(id);
            else visible.current.delete(id);
          }
          deck.want([...visible.current]);
        },
        { rootMargin: OverviewConstants.PrefetchMargin },
      ),
    [deck],
  );
  // `key` stands for `ids`, a new array on every render.
  const key = ids.join('\n');
  useEffect(() => {
    // Sessions that are gone stop being glanced.
    for (const id of [...visible.current]) if (!ids.includes(id)) visible.current.delete(id);
    deck.want([...visible.current]);
  }, [deck, key]);
  useEffect(
    () => () => {
      observer.disconnect();
      deck.want([]);
    },
    [deck, observer],
  );
  return useCallback(
    (el: HTMLElement, id: string) => {
      elements.current.set(el, id);
      observer.observe(el);
      return () => {
        observer.unobserve(el);
        elements.current.delete(el);
      };
    },
    [observer],
  );
}

/**
 * Every terminal at once, grouped by agent: a live glance of each screen (rendered by the server's
 * headless terminal, a few times a second), its state, title, what it did last and how long it has
 * been quiet. A card opens its terminal.
 */
export function Overview({ sessions, deck, paused, agentTokens, online, onOpen, onTokensChanged }: OverviewProps) {
  const track = useVisibleCards(
    deck,
    sessions.map((s) => s.id),
  );
  const groups = groupByOwner(sessions);
  return (
    <div className="overview" data-testid="overview">
      {groups.map((g) => {
        const isPaused = g.owner !== ADMIN_OWNER && (paused.all || paused.agents.includes(g.owner));
        return (
          <section key={g.owner} className="overview-group" data-testid="overview-group" data-owner={g.owner} data-paused={isPaused}>
            <header className="overview-group-head">
              <h2>
                {g.label}
                <span className="owner-count">{g.sessions.length}</span>
                {isPaused ? <span className="paused-tag">paused</span> : null}
              </h2>
              {g.owner === ADMIN_OWNER ? null : <AgentActions agent={g.owner} sessions={g.sessions} paused={isPaused} hasToken={agentTokens.has(g.owner)} online={online} onTokensChanged={onTokensChanged} />}
            </header>
            <div className="overview-grid">
              {g.sessions.map((s) => (
                <OverviewCard key={s.id} session={s} deck={deck} onOpen={onOpen} track={track} />
              ))}
            </div>
          </section>
        );
      })}
    </div>
  );
}

interface CardProps {
  session: SessionSummary;
  deck: DeckStore;
  onOpen(id: string): void;
  /** Watches the card's visibility; the function returned stops watching. */
  track(el: HTMLElement, id: string): () => void;
}

const OverviewCard = memo(function OverviewCard({ session: s, deck, onOpen, track }: CardProps) {
  const card = useRef<HTMLButtonElement>(null);
  useEffect(() => track(card.current!, s.id), [track, s.id]);
  const status = statusOf(s);
  const last = s.command;
  const activity = s.waitingForInput && s.prompt ? `asks: ${s.prompt}` : last ? `${last.status === 'running' ? 'running' : 'ran'} ${last.command ?? 'a command'}${last.exitCode !== null && last.status !== 'running' ? ` (exit ${last.exitCode})` : ''}` : 'no command yet';
  return (
    <button
      type="button"
      ref={card}
      className={`overview-card status-${status.kind}${status.bad ? ' bad' : ''} floor-${s.floor}`}
      data-testid="overview-card"
      data-session-id={s.id}
      data-status={status.kind}
      title={tabTooltip(s)}
      onClick={() => onOpen(s.id)}
    >
      <span className="card-head">
        <MiddleEllipsis text={displayTitle(s)} className="card-title" testId="card-title" />
        <RefusalBadge session={s} />
        <FloorChip session={s} compact />
      </span>
      <GlanceScreen deck={deck} id={s.id} />
      <span className="card-foot">
        <StatusBadge session={s} />
        <span className="card-activity" title={activity}>
          {activity}
        </span>
        <IdleFor deck={deck} id={s.id} />
      </span>
    </button>
  );
});

/** How long the screen has been quiet, from the last glance; refreshed every second. */
function IdleFor({ deck, id }: { deck: DeckStore; id: string }) {
  const lastOutputAt = useSyncExternalStore(
    (l) => deck.subscribeGlance(id, l),
    () => deck.glance(id)?.lastOutputAt ?? null,
  );
  const now = useNow(1000);
  if (lastOutputAt === null) return null;
  const quiet = now - lastOutputAt;
  return (
    <span className="card-idle" data-testid="card-idle" title={`Last output ${new Date(lastOutputAt).toLocaleTimeString()}`}>
      {quiet < 2000 ? 'printing' : `quiet ${shortDuration(quiet)}`}
    </span>
  );
}
