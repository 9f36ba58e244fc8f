import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { api, ApiError } from '../api/rest';
import { AttentionPanel } from '../attention/AttentionPanel';
import type { AttentionItem } from '../attention/items';
import { useAttention } from '../attention/use-attention';
import { DeckStore } from '../deck/deck-store';
import { onNotificationClick } from '../notifications/deliver';
import { NotifyButton } from '../notifications/NotifyButton';
import { Overview } from '../overview/Overview';
import { groupByHost, hostUp, tabOrder } from '../remotes/grouping';
import { RemotesButton } from '../remotes/RemotesButton';
import { remotesApi } from '../remotes/api';
import { SessionStore, type Link } from '../sessions/session-store';
import { ConnectionBanner } from './ConnectionBanner';
import { EmptyState } from './EmptyState';
import { GridIcon, InboxIcon, PauseIcon, PlayIcon, PlusIcon, SidebarIcon, TerminalIcon } from './icons';
import { LoginForm } from './LoginForm';
import { SessionView } from './SessionView';
import { Sidebar } from './Sidebar';
import { useToast } from './toasts';
import { useMediaQuery } from './use-media-query';
import { ApprovalsPanel, SessionApprovalBanner } from '../approvals/ApprovalsPanel';
import { PolicyEditor } from '../approvals/PolicyEditor';
import { useApprovals } from '../approvals/useApprovals';
import { approvalItems } from '../approvals/attention-items';
import type { RecordingInfo } from '../../../shared/timeline';
import { PastSessions } from '../replay/PastSessions';
import { ReplayView } from '../replay/ReplayView';

/** What the main area shows: the live terminals, the list of recordings, or one recording played back. */
type Page = { kind: 'live' } | { kind: 'recordings' } | { kind: 'replay'; rec: RecordingInfo };

/** `/terminal?session_id=X` (AIO's WebShell link) opens on that session. */
function requestedSession(): string | null {
  return new URLSearchParams(window.location.search).get('session_id');
}

type View = 'terminals' | 'overview';

export const LayoutConstants = {
  /** Below this width the sidebar and the queue lie over the terminal instead of beside it, and start closed. */
  NarrowQuery: '(max-width: 860px)',
  /** Below this width the queue starts closed (it would leave the terminal too little room). */
  QueueBesideQuery: '(min-width: 1200px)',
  /** The timeline panel shows by itself beside a terminal from this width, or this one when the queue is open too. */
  TimelineBesideQuery: '(min-width: 1200px)',
  TimelineBesideQueueQuery: '(min-width: 1700px)',
} as const;

export function App() {
  const store = useMemo(() => new SessionStore(), []);
  const deck = useMemo(() => new DeckStore(), []);
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const paused = useSyncExternalStore(deck.subscribePause, deck.getPause);
  const toast = useToast();
  const narrow = useMediaQuery(LayoutConstants.NarrowQuery);
  const queueFits = useMediaQuery(LayoutConstants.QueueBesideQuery);
  const [chosen, setChosenState] = useState<string | null>(requestedSession);
  const [view, setView] = useState<View>('terminals');
  const [sidebarOpen, setSidebarOpen] = useState(() => !window.matchMedia(LayoutConstants.NarrowQuery).matches);
  // null: the queue shows by itself when something needs the person and there is room; a click decides.
  const [queueChoice, setQueueOpen] = useState<boolean | null>(null);
  const [dismissed, setDismissed] = useState<ReadonlySet<string>>(new Set());
  const [currentItem, setCurrentItem] = useState<string | null>(null);
  const [agentTokens, setAgentTokens] = useState<ReadonlySet<string>>(new Set());
  const [opening, setOpening] = useState(false);
  // Counts the person's own tab choices, so a slow "New terminal" answer does not undo a later one.
  const choices = useRef(0);
  const online = state.link.state === 'live';
  const [page, setPage] = useState<Page>({ kind: 'live' });

  const choose = useCallback(
    (id: string) => {
      choices.current++;
      setChosenState(id);
      setView('terminals');
      setPage({ kind: 'live' });
      if (narrow) setSidebarOpen(false);
    },
    [narrow],
  );
  const showView = (v: View) => {
    setView(v);
    setPage({ kind: 'live' });
  };

  useEffect(() => {
    void store.start();
    return () => {
      store.stop();
      deck.stop();
    };
  }, [store, deck]);

  // The deck socket opens once the page is signed in (before, the server could only refuse it: an error
  // on the way to the login form), closes when it is signed out, and otherwise follows the events
  // socket's view of the server, as the terminal sockets do.
  useEffect(() => {
    if (state.link.state === 'live') deck.start();
    else if (state.link.state === 'login') deck.stop();
    deck.hold(state.link.state === 'down');
  }, [deck, state.link.state]);

  useEffect(() => {
    setSidebarOpen(!narrow);
  }, [narrow]);

  useEffect(() => onNotificationClick(choose), [choose]);

  const refreshTokens = useCallback(() => {
    api
      .tokens()
      .then((r) => setAgentTokens(new Set(r.tokens.map((t) => t.name))))
      .catch(() => undefined);
  }, []);
  useEffect(() => {
    if (online) refreshTokens();
  }, [online, refreshTokens]);

  // The chosen tab if it still exists, else the first one: a closed tab hands over to its neighbour.
  const ordered = useMemo(() => tabOrder(groupByHost(state.sessions.values(), state.remotes)), [state.sessions, state.remotes]);
  const selected = (chosen && state.sessions.get(chosen)) || ordered[0] || null;

  const approvals = useApprovals({ link: state.link.state, onSession: (s) => store.upsert(s), openSession: choose, toast });
  const approvalQueue = useMemo(() => approvalItems(approvals.approvals, state.sessions), [approvals.approvals, state.sessions]);
  const items = useAttention(state.sessions, dismissed, approvalQueue);
  const queueOpen = queueChoice ?? (queueFits && items.length > 0);
  const sideRoom = useMediaQuery(queueOpen ? LayoutConstants.TimelineBesideQueueQuery : LayoutConstants.TimelineBesideQuery);
  const waiting = ordered.filter((s) => s.waitingForInput && s.shellState !== 'exited').length;
  const awaitingApproval = approvals.approvals.length;
  useEffect(() => {
    const n = waiting + awaitingApproval;
    document.title = n ? `(${n}) ptydeck` : 'ptydeck';
  }, [waiting, awaitingApproval]);

  const openItem = useCallback(
    (item: AttentionItem) => {
      setCurrentItem(item.key);
      if (item.sessionId) choose(item.sessionId);
    },
    [choose],
  );

  // F8 moves to the next thing that needs the person (Shift+F8 back), as in an editor's problem list.
  useEffect(() => {
    const onKey = (ev: KeyboardEvent) => {
      if (ev.key !== 'F8' || ev.ctrlKey || ev.altKey || ev.metaKey) return;
      // Ours, in every phase: a terminal being typed in must not get it too.
      ev.preventDefault();
      ev.stopPropagation();
      if (items.length === 0) {
        toast('Nothing needs you right now.');
        return;
      }
      const at = items.findIndex((i) => i.key === currentItem);
      const next = at < 0 ? (ev.shiftKey ? items.length - 1 : 0) : (at + (ev.shiftKey ? -1 : 1) + items.length) % items.length;
      setQueueOpen(true);
      openItem(items[next]);
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, [items, currentItem, openItem, toast]);

  const openTerminal = async () => {
    setOpening(true);
    const choiceAtClick = choices.current;
    try {
      const { session } = await api.createSession();
      store.upsert(session);
      if (choices.current === choiceAtClick) choose(session.id);
    } catch (err) {
      toast(`Could not open a terminal: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
    } finally {
      setOpening(false);
    }
  };

  const anyPaused = paused.all || paused.agents.length > 0;
  const pauseAll = async () => {
    try {
      const r = anyPaused ? await api.resume(null) : await api.pause(null);
      toast(anyPaused ? `Resumed every agent: ${r.sessions.length} terminal(s) handed back.` : `Paused every agent: ${r.sessions.length} terminal(s) taken over; new ones are too until you resume.`);
    } catch (err) {
      toast(`${anyPaused ? 'Resuming' : 'Pausing'} failed: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
    }
  };

  if (state.link.state === 'login') return <LoginForm message={state.link.message} onLoggedIn={() => void store.start()} />;

  const hasAgents = ordered.some((s) => s.owner !== 'admin');
  return (
    <div className={`app app-${state.link.state}${narrow ? ' narrow' : ''}`}>
      <header className="topbar">
        {ordered.length > 0 || state.remotes.length > 0 ? (
          <button type="button" className="icon-btn" aria-label={sidebarOpen ? 'Hide the terminal list' : 'Show the terminal list'} aria-expanded={sidebarOpen} title="Terminal list" onClick={() => setSidebarOpen((o) => !o)} data-testid="sidebar-toggle">
            <SidebarIcon />
          </button>
        ) : null}
        <div className="brand">
          <TerminalIcon width={16} height={16} />
          <h1>ptydeck</h1>
        </div>
        <span className="topbar-count" data-testid="session-count">
          {state.loaded ? `${ordered.length} terminal${ordered.length === 1 ? '' : 's'}${waiting ? ` · ${waiting} waiting for input` : ''}` : ''}
          {awaitingApproval ? ` · ${awaitingApproval} waiting for approval` : ''}
        </span>
        {ordered.length > 0 ? (
          <div className="segmented view-switch" role="group" aria-label="View">
            <button type="button" className={`seg${page.kind === 'live' && view === 'terminals' ? ' active' : ''}`} aria-pressed={page.kind === 'live' && view === 'terminals'} onClick={() => showView('terminals')} title="One terminal at a time">
              <TerminalIcon />
              <span className="btn-label">Terminals</span>
            </button>
            <button type="button" className={`seg${page.kind === 'live' && view === 'overview' ? ' active' : ''}`} aria-pressed={page.kind === 'live' && view === 'overview'} onClick={() => showView('overview')} title="Every terminal at a glance" data-testid="overview-button">
              <GridIcon />
              <span className="btn-label">Overview</span>
            </button>
          </div>
        ) : null}
        <span className="spacer" />
        {hasAgents || anyPaused ? (
          <button type="button" className={`btn ${anyPaused ? 'btn-resume' : 'btn-quiet'}`} disabled={!online} onClick={() => void pauseAll()} data-testid="pause-all" title={anyPaused ? 'Hand every paused terminal back' : 'Take over every agent terminal at once, and the ones they open, until you resume'}>
            {anyPaused ? <PlayIcon /> : <PauseIcon />}
            <span className="btn-label">{anyPaused ? 'Resume all' : 'Pause all'}</span>
          </button>
        ) : null}
        <button
          type="button"
          className={`btn ${items.length ? 'btn-attention' : 'btn-quiet'}`}
          aria-pressed={queueOpen}
          onClick={() => setQueueOpen(!queueOpen)}
          data-testid="attention-button"
          title="What needs you, most urgent first (F8: next)"
        >
          <InboxIcon />
          <span className="btn-label">Needs you</span>
          <span className="attention-badge" data-testid="attention-count">
            {items.length}
          </span>
        </button>
        <button type="button" className={`btn${awaitingApproval ? ' btn-attention' : ' btn-quiet'}`} onClick={() => approvals.setPanelOpen(!approvals.panelOpen)} aria-expanded={approvals.panelOpen} data-testid="approvals-toggle" data-live={approvals.live} title="Agents' commands waiting for your approval, and the policy">
          Approvals{awaitingApproval ? ` (${awaitingApproval})` : ''}
        </button>
        <NotifyButton />
        <LinkPill link={state.link} />
        <RemotesButton remotes={state.remotes} disabled={!online} />
        <button type="button" className={`btn ${page.kind === 'live' ? 'btn-quiet' : 'btn-primary'}`} aria-pressed={page.kind !== 'live'} onClick={() => setPage(page.kind === 'live' ? { kind: 'recordings' } : { kind: 'live' })} title="Every kept recording, to play back or export">
          <span className="btn-label">Recordings</span>
        </button>
        <button type="button" className="btn btn-primary" onClick={() => void openTerminal()} disabled={opening || !online} title="Open a terminal of your own">
          <PlusIcon />
          <span className="btn-label">New terminal</span>
        </button>
      </header>
      <ConnectionBanner link={state.link} onRetry={() => store.retryNow()} />
      <div className="workspace">
        {page.kind !== 'live' || ordered.length > 0 || state.remotes.length > 0 ? (
          <>
            {(ordered.length > 0 || state.remotes.length > 0) && sidebarOpen ? (
              <Sidebar
                sessions={ordered}
                selected={page.kind === 'live' ? (selected?.id ?? null) : null}
                onSelect={choose}
                paused={paused}
                agentTokens={agentTokens}
                online={online}
                onTokensChanged={refreshTokens}
                remotes={state.remotes}
                onRetryRemote={(name) => void remotesApi.retry(name).catch(() => undefined)}
                approvalsBySession={approvals.bySession}
              />
            ) : null}
            {page.kind === 'recordings' ? (
              <main className="main main-replay">
                <PastSessions onOpen={(rec) => setPage({ kind: 'replay', rec })} />
              </main>
            ) : page.kind === 'replay' ? (
              <main className="main main-replay">
                <ReplayView key={page.rec.key} source={{ kind: 'recording', key: page.rec.key }} title={page.rec.session} jump={null} withTimeline onClose={() => setPage({ kind: 'recordings' })} closeLabel="All recordings" />
              </main>
            ) : (
              <main className={`main${view === 'overview' || selected ? '' : ' main-empty'}`}>
                {view === 'overview' ? (
                  <Overview sessions={ordered} deck={deck} paused={paused} agentTokens={agentTokens} online={online} onOpen={choose} onTokensChanged={refreshTokens} />
                ) : selected ? (
                  <SessionView
                    key={selected.id}
                    session={selected}
                    store={store}
                    online={online && hostUp(selected, state.remotes)}
                    sideRoom={sideRoom}
                    banner={<SessionApprovalBanner approvals={approvals.approvals.filter((a) => a.session_id === selected.id)} onShow={() => approvals.setPanelOpen(true)} />}
                  />
                ) : (
                  <EmptyState onOpen={() => void openTerminal()} opening={opening || !online} />
                )}
              </main>
            )}
          </>
        ) : (
          <main className="main main-empty">
            {state.loaded ? (
              <EmptyState onOpen={() => void openTerminal()} opening={opening || !online} />
            ) : (
              <div className="loading" data-testid="loading">
                Connecting to ptydeck…
              </div>
            )}
          </main>
        )}
        {queueOpen ? (
          <AttentionPanel
            items={items}
            sessions={state.sessions}
            current={currentItem}
            onOpen={openItem}
            onDismiss={(item) => setDismissed((d) => new Set([...d, item.key]))}
            onTakeOver={(id) =>
              void api
                .takeover(id)
                .then((s) => store.upsert(s))
                .catch((err: unknown) => toast(`Take over failed: ${err instanceof ApiError ? err.message : String(err)}`, 'error'))
            }
            onClose={() => setQueueOpen(false)}
          />
        ) : null}
        {approvals.panelOpen ? <ApprovalsPanel approvals={approvals.approvals} actions={approvals.actions} onClose={() => approvals.setPanelOpen(false)} onEditPolicy={() => approvals.setEditingPolicy(true)} /> : null}
      </div>
      {approvals.editingPolicy && approvals.policy ? <PolicyEditor policy={approvals.policy} onSave={approvals.savePolicy} onClose={() => approvals.setEditingPolicy(false)} /> : null}
    </div>
  );
}

function LinkPill({ link }: { link: Link }) {
  const [text, kind] = link.state === 'live' ? ['Live', 'live'] : link.state === 'down' ? ['Offline', 'down'] : ['Connecting', 'connecting'];
  return (
    <span className={`link-pill link-${kind}`} data-testid="link-state" data-state={link.state} title={link.state === 'live' ? 'Connected: sessions update live' : 'Not connected to the server'}>
      <span className="link-dot" aria-hidden="true" />
      <span className="btn-label">{text}</span>
    </span>
  );
}
