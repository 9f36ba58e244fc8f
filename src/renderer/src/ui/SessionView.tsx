import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import type { FloorMode, SessionSummary } from '../../../shared/types';
import { api, ApiError } from '../api/rest';
import { FloorText, floorBanner, floorHolder, isEnded, isPipeSession, ownerLabel, statusOf } from '../sessions/describe';
import type { SessionStore } from '../sessions/session-store';
import type { RendererKind } from '../terminal/renderer-choice';
import { shortcutOf } from '../terminal/shortcuts';
import type { TerminalController, TerminalEvents, ViewLink } from '../terminal/terminal-controller';
import { AioNote, HostTag } from '../remotes/RemoteNotes';
import { FloorIcon, StatusBadge } from './badges';
import { FindBar } from './FindBar';
import { FloorControls } from './FloorControls';
import { LinkConfirm } from './LinkConfirm';
import { CloseIcon, SearchIcon } from './icons';
import { PANEL_ID, tabDomId } from './Sidebar';
import { TerminalPane } from './TerminalPane';
import { useClearToast, useToast } from './toasts';
import { TimelinePanel } from '../timeline/TimelinePanel';
import { ReplayView, type ReplayJump } from '../replay/ReplayView';

/** Whether the timeline panel is open beside terminals, remembered across reloads. */
const TIMELINE_PREF = 'ptydeck.timeline';
const timelinePreferred = (): boolean => {
  try {
    return window.localStorage.getItem(TIMELINE_PREF) !== 'closed';
  } catch {
    return true;
  }
};

interface SessionViewProps {
  session: SessionSummary;
  store: SessionStore;
  /** The events socket is up: REST calls have a chance, and the summary is current. */
  online: boolean;
  /** Shown between the header and the terminal (a feature's notice, e.g. a command waiting for approval). */
  banner?: ReactNode;
}

export const ConfirmTiming = { CloseArmedMs: 4000 } as const;

const READ_ONLY_HINT = 'read-only-hint';

/** The selected session: its header with the floor controls, and the terminal in a frame coloured by floor. */
export function SessionView({ session, store, online, banner }: SessionViewProps) {
  const toast = useToast();
  const clearToast = useClearToast();
  const controller = useRef<TerminalController | null>(null);
  const [link, setLink] = useState<ViewLink>('connecting');
  const [renderer, setRenderer] = useState<RendererKind>('dom');
  const [find, setFind] = useState({ open: false, signal: 0 });
  const [busy, setBusy] = useState(false);
  const [pendingLink, setPendingLink] = useState<string | null>(null);
  const ended = isEnded(session);
  const status = statusOf(session);
  const lastReadOnlyHint = useRef(0);
  const [timelineOpen, setTimelineOpen] = useState(timelinePreferred);
  const [replaying, setReplaying] = useState(false);
  const [jump, setJump] = useState<ReplayJump | null>(null);
  const toggleTimeline = () =>
    setTimelineOpen((open) => {
      try {
        window.localStorage.setItem(TIMELINE_PREF, open ? 'closed' : 'open');
      } catch {
        // private mode: not remembered
      }
      return !open;
    });

  const openFind = useCallback(() => setFind((f) => ({ open: true, signal: f.signal + 1 })), []);
  const closeFind = useCallback(() => {
    setFind((f) => ({ ...f, open: false }));
    controller.current?.focus();
  }, []);

  // Ctrl+Shift+F also works while the focus is outside the terminal (a button, the tab list).
  useEffect(() => {
    const onKey = (ev: KeyboardEvent) => {
      if (shortcutOf(ev) === 'find') {
        ev.preventDefault();
        openFind();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [openFind]);

  const events: TerminalEvents = {
    onLink: setLink,
    onNotice: (m) => toast(m, 'error'),
    onRenderer: setRenderer,
    onFindShortcut: openFind,
    onOpenLink: setPendingLink,
    onReadOnlyKey: () => {
      // Once in a while is enough: every key would bury the message.
      if (Date.now() - lastReadOnlyHint.current < 3000) return;
      lastReadOnlyHint.current = Date.now();
      toast(ended ? 'This session has ended: it no longer takes input.' : 'You are watching: press Type or Take over to send keys.', 'info', READ_ONLY_HINT);
    },
  };

  // The hint is about watching; once the person may type, it is wrong.
  useEffect(() => {
    if (session.floor !== 'watch') clearToast(READ_ONLY_HINT);
  }, [session.floor, clearToast]);

  const run = async (what: string, call: () => Promise<SessionSummary | void>) => {
    setBusy(true);
    try {
      const updated = await call();
      if (updated) store.upsert(updated);
    } catch (err) {
      toast(`${what} failed: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  const setFloor = (mode: FloorMode) => void run('Changing the floor', () => (mode === 'takeover' ? api.takeover(session.id) : api.setFloor(session.id, mode)));
  const release = () => void run('Release', () => api.release(session.id));
  const interrupt = () =>
    void run('Interrupt', async () => {
      await api.interrupt(session.id);
      toast('Sent Ctrl-C');
    });

  return (
    <section className={`session-view floor-${session.floor}${ended ? ' ended' : ''}`} role="tabpanel" id={PANEL_ID} aria-labelledby={tabDomId(session.id)}>
      <header className="session-header">
        <div className="session-title">
          <div className="title-row">
            <HostTag session={session} />
            <h2 className="session-id" title={session.id}>
              {session.remote?.id ?? session.id}
            </h2>
            <StatusBadge session={session} />
            {status.command ? (
              <code className="session-command" data-testid="session-command">
                {status.command}
              </code>
            ) : null}
          </div>
          <div className="session-meta">
            <span>{ownerLabel(session.owner)}</span>
            <span className="mono" title="Working directory">{session.cwd}</span>
            {isPipeSession(session) ? (
              <span className="pipe-legend" data-testid="session-kind" title="No terminal: commands run on pipes, their stdout and stderr apart">
                pipes: stdout · <span className="stderr-sample">stderr</span> · <span className="transcript-sample">$ command</span>
              </span>
            ) : (
              <span className="mono" title="PTY size" data-testid="pty-size">
                {session.cols}×{session.rows}
              </span>
            )}
            <span title="Clients attached now (agents and viewers)">{session.attached} attached</span>
            {session.durable ? <span title="Survives a restart of ptydeck">durable</span> : null}
            {session.restored ? <span title="It kept running while ptydeck was down, and was taken back">restored after restart</span> : null}
            <span className="renderer-tag" data-testid="renderer" title="Terminal renderer">
              {renderer === 'webgl' ? 'WebGL' : 'DOM'}
            </span>
          </div>
        </div>
        <div className="session-actions">
          <button
            type="button"
            className={`btn btn-small ${replaying ? 'btn-primary' : 'btn-quiet'}`}
            aria-pressed={replaying}
            onClick={() => {
              setJump(null);
              setReplaying((r) => !r);
            }}
            title="Play this terminal's recording back, from any moment"
          >
            Replay
          </button>
          <button type="button" className={`btn btn-small ${timelineOpen ? 'btn-primary' : 'btn-quiet'}`} aria-pressed={timelineOpen} onClick={toggleTimeline} title="Who did what, and when">
            Timeline
          </button>
          <button type="button" className="icon-btn" aria-label="Find in terminal" title="Find (Ctrl+Shift+F)" onClick={openFind}>
            <SearchIcon />
          </button>
          <CloseButton session={session} store={store} disabled={!online} />
        </div>
      </header>
      {banner}

      <div className="session-body">
        {replaying ? (
          <ReplayView source={{ kind: 'session', id: session.id }} title={session.id} jump={jump} withTimeline={false} onClose={() => setReplaying(false)} closeLabel={ended ? 'Back' : 'Back to live'} />
        ) : (
          <div className={`terminal-frame floor-${session.floor}${ended ? ' ended' : ''}`} data-testid="terminal-frame" data-floor={session.floor} data-controller={session.controller}>
            <FloorStrip session={session} link={link}>
              {/* An ended session has no floor left to hold. */}
              {ended ? null : <FloorControls session={session} busy={busy} offline={!online} onFloor={setFloor} onRelease={release} onInterrupt={interrupt} />}
            </FloorStrip>
            <AioNote session={session} />
            <div className="terminal-body">
              <TerminalPane sessionId={session.id} floor={session.floor} ended={ended} events={events} onController={(c) => (controller.current = c)} />
              {find.open && controller.current ? <FindBar search={controller.current.search} focusSignal={find.signal} onClose={closeFind} /> : null}
            </div>
          </div>
        )}
        {timelineOpen ? (
          <TimelinePanel
            source={{ kind: 'session', id: session.id }}
            live={!ended}
            refreshKey={session}
            selectedSeq={replaying ? (jump?.seq ?? null) : null}
            onPick={(e) => {
              setJump((j) => ({ at: e.at, seq: e.seq, n: (j?.n ?? 0) + 1 }));
              setReplaying(true);
            }}
          />
        ) : null}
      </div>
      {pendingLink !== null ? (
        <LinkConfirm
          uri={pendingLink}
          onCancel={() => {
            setPendingLink(null);
            controller.current?.focus();
          }}
          onOpen={() => {
            // noopener: the opened page gets no handle on this one (and in Electron, the browser opens it).
            window.open(pendingLink, '_blank', 'noopener,noreferrer');
            setPendingLink(null);
          }}
        />
      ) : null}
    </section>
  );
}

/** The band above the terminal that says, in words and colour, who may type right now. */
function FloorStrip({ session, link, children }: { session: SessionSummary; link: ViewLink; children: ReactNode }) {
  const ended = isEnded(session);
  return (
    <div className="floor-strip" data-testid="floor-banner" data-floor={session.floor} data-ended={ended}>
      <div className="strip-label">
        {ended ? (
          <>
            <strong>Ended</strong>
            <span className="strip-text">
              {session.exitCode === null ? 'The shell is gone.' : `The shell exited with code ${session.exitCode}.`} Its last screen stays until you dismiss it.
            </span>
          </>
        ) : (
          <>
            <FloorIcon floor={session.floor} />
            <strong>{FloorText[session.floor].short}</strong>
            <span className="strip-holder" data-testid="floor-holder">
              {floorHolder(session)}
            </span>
            <span className="strip-text">{floorBanner(session)}</span>
          </>
        )}
        {link !== 'live' ? (
          <span className={`view-link view-link-${link}`} data-testid="view-link">
            {link === 'connecting' ? 'Connecting…' : 'Disconnected — reconnecting…'}
          </span>
        ) : null}
      </div>
      {children}
    </div>
  );
}

/**
 * Closing an agent's live terminal ends its work, so it takes a second click; dismissing an ended one
 * (or closing your own) is a single click.
 */
function CloseButton({ session, store, disabled }: { session: SessionSummary; store: SessionStore; disabled: boolean }) {
  const toast = useToast();
  const [armed, setArmed] = useState(false);
  const ended = isEnded(session);
  const needsConfirm = !ended && session.origin !== 'viewer';
  useEffect(() => {
    if (!armed) return;
    const timer = setTimeout(() => setArmed(false), ConfirmTiming.CloseArmedMs);
    return () => clearTimeout(timer);
  }, [armed]);
  const close = async () => {
    if (needsConfirm && !armed) {
      setArmed(true);
      return;
    }
    try {
      await api.closeSession(session.id);
      store.remove(session.id);
    } catch (err) {
      toast(`Closing failed: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
    }
  };
  const label = ended ? 'Dismiss' : armed ? 'Really close?' : 'Close';
  return (
    <button type="button" disabled={disabled} className={`btn ${ended ? 'btn-primary' : armed ? 'btn-danger' : 'btn-quiet'}`} onClick={() => void close()} title={ended ? 'Remove this ended session' : "End this terminal and everything running in it"}>
      <CloseIcon />
      {label}
    </button>
  );
}
