import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { api, ApiError } from '../api/rest';
import { groupByHost, hostUp, tabOrder } from '../remotes/grouping';
import { RemotesButton } from '../remotes/RemotesButton';
import { remotesApi } from '../remotes/api';
import { SessionStore, type Link } from '../sessions/session-store';
import { ConnectionBanner } from './ConnectionBanner';
import { EmptyState } from './EmptyState';
import { PlusIcon, TerminalIcon } from './icons';
import { LoginForm } from './LoginForm';
import { SessionView } from './SessionView';
import { Sidebar } from './Sidebar';
import { useToast } from './toasts';
import { ApprovalsPanel, SessionApprovalBanner } from '../approvals/ApprovalsPanel';
import { PolicyEditor } from '../approvals/PolicyEditor';
import { useApprovals } from '../approvals/useApprovals';
import type { RecordingInfo } from '../../../shared/timeline';
import { PastSessions } from '../replay/PastSessions';
import { ReplayView } from '../replay/ReplayView';

/** What the main area shows: the live terminals, the list of recordings, or one recording played back. */
type Page = { kind: 'live' } | { kind: 'recordings' } | { kind: 'replay'; rec: RecordingInfo };

/** `/terminal?session_id=X` (AIO's WebShell link) opens on that session. */
function requestedSession(): string | null {
  return new URLSearchParams(window.location.search).get('session_id');
}

export function App() {
  const store = useMemo(() => new SessionStore(), []);
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const toast = useToast();
  const [chosen, setChosenState] = useState<string | null>(requestedSession);
  const [opening, setOpening] = useState(false);
  // Counts the person's own tab choices, so a slow "New terminal" answer does not undo a later one.
  const choices = useRef(0);
  const [page, setPage] = useState<Page>({ kind: 'live' });
  const choose = useCallback((id: string) => {
    choices.current++;
    setChosenState(id);
    setPage({ kind: 'live' });
  }, []);

  useEffect(() => {
    void store.start();
    return () => store.stop();
  }, [store]);

  // The chosen tab if it still exists, else the first one: a closed tab hands over to its neighbour.
  const ordered = useMemo(() => tabOrder(groupByHost(state.sessions.values(), state.remotes)), [state.sessions, state.remotes]);
  const selected = (chosen && state.sessions.get(chosen)) || ordered[0] || null;

  // Signed in once the events socket was live; a later outage keeps it (its socket reconnects by itself).
  const [signedIn, setSignedIn] = useState(false);
  useEffect(() => {
    if (state.link.state === 'live') setSignedIn(true);
    else if (state.link.state === 'login') setSignedIn(false);
  }, [state.link.state]);
  const approvals = useApprovals({ signedIn, onSession: (s) => store.upsert(s), openSession: choose, toast });
  const waiting = ordered.filter((s) => s.waitingForInput && s.shellState !== 'exited').length;
  const awaitingApproval = approvals.approvals.length;
  useEffect(() => {
    const n = waiting + awaitingApproval;
    document.title = n ? `(${n}) ptydeck` : 'ptydeck';
  }, [waiting, awaitingApproval]);

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

  if (state.link.state === 'login') return <LoginForm message={state.link.message} onLoggedIn={() => void store.start()} />;

  return (
    <div className={`app app-${state.link.state}`}>
      <header className="topbar">
        <div className="brand">
          <TerminalIcon width={16} height={16} />
          <h1>ptydeck</h1>
        </div>
        <span className="topbar-count" data-testid="session-count">
          {state.loaded ? `${ordered.length} terminal${ordered.length === 1 ? '' : 's'}${waiting ? ` · ${waiting} waiting for input` : ''}` : ''}
          {awaitingApproval ? ` · ${awaitingApproval} waiting for approval` : ''}
        </span>
        <span className="spacer" />
        <button type="button" className={`btn${awaitingApproval ? ' btn-attention' : ' btn-quiet'}`} onClick={() => approvals.setPanelOpen(!approvals.panelOpen)} aria-expanded={approvals.panelOpen} data-testid="approvals-toggle">
          Approvals{awaitingApproval ? ` (${awaitingApproval})` : ''}
        </button>
        <LinkPill link={state.link} />
        <RemotesButton remotes={state.remotes} disabled={state.link.state !== 'live'} />
        <button type="button" className={`btn ${page.kind === 'live' ? 'btn-quiet' : 'btn-primary'}`} aria-pressed={page.kind !== 'live'} onClick={() => setPage(page.kind === 'live' ? { kind: 'recordings' } : { kind: 'live' })}>
          Recordings
        </button>
        <button type="button" className="btn btn-primary" onClick={() => void openTerminal()} disabled={opening || state.link.state !== 'live'}>
          <PlusIcon />
          New terminal
        </button>
      </header>
      <ConnectionBanner link={state.link} onRetry={() => store.retryNow()} />
      <div className="workspace">
        {page.kind !== 'live' ? (
          <>
            {ordered.length > 0 || state.remotes.length > 0 ? <Sidebar sessions={ordered} selected={null} onSelect={choose} remotes={state.remotes} onRetryRemote={(name) => void remotesApi.retry(name).catch(() => undefined)} approvalsBySession={approvals.bySession} /> : null}
            <main className="main main-replay">
              {page.kind === 'recordings' ? (
                <PastSessions onOpen={(rec) => setPage({ kind: 'replay', rec })} />
              ) : (
                <ReplayView key={page.rec.key} source={{ kind: 'recording', key: page.rec.key }} title={page.rec.session} jump={null} withTimeline onClose={() => setPage({ kind: 'recordings' })} closeLabel="All recordings" />
              )}
            </main>
          </>
        ) : ordered.length > 0 || state.remotes.length > 0 ? (
          <>
            <Sidebar sessions={ordered} selected={selected?.id ?? null} onSelect={choose} remotes={state.remotes} onRetryRemote={(name) => void remotesApi.retry(name).catch(() => undefined)} approvalsBySession={approvals.bySession} />
            <main className={`main${selected ? '' : ' main-empty'}`}>
              {selected ? (
                <SessionView
                  key={selected.id}
                  session={selected}
                  store={store}
                  online={state.link.state === 'live' && hostUp(selected, state.remotes)}
                  banner={<SessionApprovalBanner approvals={approvals.approvals.filter((a) => a.session_id === selected.id)} onShow={() => approvals.setPanelOpen(true)} />}
                />
              ) : (
                <EmptyState onOpen={() => void openTerminal()} opening={opening || state.link.state !== 'live'} />
              )}
            </main>
          </>
        ) : (
          <main className="main main-empty">
            {state.loaded ? (
              <EmptyState onOpen={() => void openTerminal()} opening={opening || state.link.state !== 'live'} />
            ) : (
              <div className="loading" data-testid="loading">
                Connecting to ptydeck…
              </div>
            )}
          </main>
        )}
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
      {text}
    </span>
  );
}
