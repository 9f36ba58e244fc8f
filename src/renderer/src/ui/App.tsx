import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { api, ApiError } from '../api/rest';
import { groupByOwner } from '../sessions/describe';
import { SessionStore, type Link } from '../sessions/session-store';
import { ConnectionBanner } from './ConnectionBanner';
import { EmptyState } from './EmptyState';
import { PlusIcon, TerminalIcon } from './icons';
import { LoginForm } from './LoginForm';
import { SessionView } from './SessionView';
import { Sidebar } from './Sidebar';
import { useToast } from './toasts';
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
  const ordered = useMemo(() => groupByOwner(state.sessions.values()).flatMap((g) => g.sessions), [state.sessions]);
  const selected = (chosen && state.sessions.get(chosen)) || ordered[0] || null;

  const waiting = ordered.filter((s) => s.waitingForInput && s.shellState !== 'exited').length;
  useEffect(() => {
    document.title = waiting ? `(${waiting}) ptydeck` : 'ptydeck';
  }, [waiting]);

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
        </span>
        <span className="spacer" />
        <LinkPill link={state.link} />
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
            {ordered.length > 0 ? <Sidebar sessions={ordered} selected={null} onSelect={choose} /> : null}
            <main className="main main-replay">
              {page.kind === 'recordings' ? (
                <PastSessions onOpen={(rec) => setPage({ kind: 'replay', rec })} />
              ) : (
                <ReplayView key={page.rec.key} source={{ kind: 'recording', key: page.rec.key }} title={page.rec.session} jump={null} withTimeline onClose={() => setPage({ kind: 'recordings' })} closeLabel="All recordings" />
              )}
            </main>
          </>
        ) : ordered.length > 0 ? (
          <>
            <Sidebar sessions={ordered} selected={selected?.id ?? null} onSelect={choose} />
            <main className="main">{selected ? <SessionView key={selected.id} session={selected} store={store} online={state.link.state === 'live'} /> : null}</main>
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
      </div>
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
