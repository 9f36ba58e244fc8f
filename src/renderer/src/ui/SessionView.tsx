import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import type { FloorMode, SessionSummary } from '../../../shared/types';
import { api, ApiError } from '../api/rest';
import { QuestionBar } from '../session/QuestionBar';
import { SESSION_SIDE_PANELS } from '../session/side-panels';
import { TitleEditor } from '../session/TitleEditor';
import { displayTitle, FloorText, floorBanner, floorHolder, isEnded, isOwnSession, isPipeSession, ownerLabel, refusalLines, secondsUntil, shortDuration, statusOf } from '../sessions/describe';
import type { SessionStore } from '../sessions/session-store';
import type { RendererKind } from '../terminal/renderer-choice';
import { forgetScreen } from '../terminal/screen-cache';
import { shortcutOf } from '../terminal/shortcuts';
import type { TerminalController, TerminalEvents, ViewLink } from '../terminal/terminal-controller';
import { terminalFont } from '../terminal/theme';
import { AioNote, HostTag } from '../remotes/RemoteNotes';
import { ArmedButton } from './ArmedButton';
import { FloorIcon, StatusBadge } from './badges';
import { FindBar } from './FindBar';
import { FloorControls } from './FloorControls';
import { LinkConfirm } from './LinkConfirm';
import { CloseIcon, SearchIcon, WarningIcon } from './icons';
import { PANEL_ID, tabDomId } from './Sidebar';
import { TerminalPane } from './TerminalPane';
import { useClearToast, useToast } from './toasts';
import { useNow } from './use-now';
import { TimelinePanel } from '../timeline/TimelinePanel';
import { ReplayView, type ReplayJump } from '../replay/ReplayView';

/** Whether the person opened or closed the timeline panel beside terminals, remembered across reloads (null: never chose). */
const TIMELINE_PREF = 'ptydeck.timeline';
const timelineChosen = (): boolean | null => {
  try {
    const chosen = window.localStorage.getItem(TIMELINE_PREF);
    return chosen === null ? null : chosen !== 'closed';
  } catch {
    return null; // private mode: nothing remembered
  }
};

interface SessionViewProps {
  session: SessionSummary;
  store: SessionStore;
  /** The events socket is up: REST calls have a chance, and the summary is current. */
  online: boolean;
  /**
   * There is room beside the terminal for the timeline (App's LayoutConstants): until the person
   * chooses, it shows only then, or its 300 px would shrink an agent's screen below a readable font.
   */
  sideRoom: boolean;
  /** Shown between the header and the terminal (a feature's notice, e.g. a command waiting for approval). */
  banner?: ReactNode;
}

const READ_ONLY_HINT = 'read-only-hint';

/** The selected session: its header, the floor strip and controls, the terminal in a frame coloured by floor, and any side panels. */
export function SessionView({ session, store, online, sideRoom, banner }: SessionViewProps) {
  const toast = useToast();
  const clearToast = useClearToast();
  const controller = useRef<TerminalController | null>(null);
  const [link, setLink] = useState<ViewLink>('connecting');
  const [renderer, setRenderer] = useState<RendererKind>('dom');
  const [scale, setScale] = useState<{ fontSize: number; cropped: boolean }>({ fontSize: terminalFont.fontSize, cropped: false });
  const [find, setFind] = useState({ open: false, signal: 0 });
  const [busy, setBusy] = useState(false);
  const [pendingLink, setPendingLink] = useState<string | null>(null);
  const ended = isEnded(session);
  const status = statusOf(session);
  const lastReadOnlyHint = useRef(0);
  const [timelineChoice, setTimelineChoice] = useState(timelineChosen);
  const timelineOpen = timelineChoice ?? sideRoom;
  const [replaying, setReplaying] = useState(false);
  const [jump, setJump] = useState<ReplayJump | null>(null);
  const toggleTimeline = () => {
    try {
      window.localStorage.setItem(TIMELINE_PREF, timelineOpen ? 'closed' : 'open');
    } catch {
      // private mode: not remembered
    }
    setTimelineChoice(!timelineOpen);
  };

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
    onScale: setScale,
    onOpenLink: setPendingLink,
    onReadOnlyKey: () => {
      // Once in a while is enough: every key would bury the message.
      if (Date.now() - lastReadOnlyHint.current < 3000) return;
      lastReadOnlyHint.current = Date.now();
      const text = ended
        ? 'This session has ended: it no longer takes input.'
        : isOwnSession(session)
          ? 'This tab is read only: press Type to send keys.'
          : 'You are watching: press Type or Take over to send keys.';
      toast(text, 'info', READ_ONLY_HINT);
    },
  };

  // The hint is about this tab being read only: wrong once the person may type, and about another
  // terminal once this one is no longer shown.
  useEffect(() => {
    if (session.floor !== 'watch' && !ended) clearToast(READ_ONLY_HINT);
  }, [session.floor, ended, clearToast]);
  useEffect(() => () => clearToast(READ_ONLY_HINT), [clearToast]);

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
  const interrupt = () => {
    const what = session.shellState === 'busy' ? (session.command?.command ?? 'the running program') : null;
    void run('Interrupt', async () => {
      await api.interrupt(session.id);
      // The server records it as the person's; the agent sees the ^C in its output.
      toast(what ? `You interrupted ${what} (Ctrl-C, sent as you)` : 'You sent Ctrl-C');
    });
  };
  const fit = () => {
    if (controller.current?.fitToWindow()) toast(`Fitted to your window. ${ownerLabel(session.owner)}'s size (${session.cols}×${session.rows}) comes back when you release.`);
  };
  const panels = SESSION_SIDE_PANELS.filter((p) => !p.appliesTo || p.appliesTo(session));
  const otherViewers = Math.max(0, session.viewers - (link === 'live' ? 1 : 0));
  const agentSockets = Math.max(0, session.attached - session.viewers);

  return (
    <section className={`session-view floor-${session.floor}${ended ? ' ended' : ''}`} role="tabpanel" id={PANEL_ID} aria-labelledby={tabDomId(session.id)}>
      <header className="session-header">
        <div className="session-title">
          <div className="title-row">
            <HostTag session={session} />
            {/* A remote's session is renamed at its own server (the deck does not forward a rename). */}
            <TitleEditor key={session.id} session={session} store={store} disabled={!online || session.remote != null} />
            <StatusBadge session={session} />
            {status.command && !session.waitingForInput ? (
              <code className="session-command" data-testid="session-command">
                {status.command}
              </code>
            ) : null}
          </div>
          <div className="session-meta">
            <span>{ownerLabel(session.owner)}</span>
            {session.title ? <span className="mono" title="Session id">{session.id}</span> : null}
            <span className="mono" title="Working directory">
              {session.cwd}
            </span>
            {isPipeSession(session) ? (
              <span className="pipe-legend" data-testid="session-kind" title="No terminal: commands run on pipes, their stdout and stderr apart">
                pipes: stdout · <span className="stderr-sample">stderr</span> · <span className="transcript-sample">$ command</span>
              </span>
            ) : (
              <span className="mono" title={isOwnSession(session) ? 'PTY size' : "The agent's terminal size: it keeps it unless you fit it to your window"} data-testid="pty-size">
                {session.cols}×{session.rows}
              </span>
            )}
            {scale.fontSize !== terminalFont.fontSize ? (
              <span title="The whole screen is shown; the font is scaled to fit this pane" data-testid="scaled">
                shown at {scale.fontSize} px
              </span>
            ) : null}
            {agentSockets > 0 ? <span title="Agent connections on a socket (REST calls are not counted)">{agentSockets === 1 ? '1 agent socket' : `${agentSockets} agent sockets`}</span> : null}
            {otherViewers > 0 ? (
              <span title="Other tabs or windows showing this terminal" data-testid="other-viewers">
                {otherViewers === 1 ? '1 other viewer' : `${otherViewers} other viewers`}
              </span>
            ) : null}
            {session.durable ? <span title="Survives a restart of ptydeck">durable</span> : null}
            {session.restored ? <span title="It kept running while ptydeck was down, and was taken back">restored after restart</span> : null}
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
          <ReplayView source={{ kind: 'session', id: session.id }} title={displayTitle(session)} jump={jump} withTimeline={false} onClose={() => setReplaying(false)} closeLabel={ended ? 'Back' : 'Back to live'} />
        ) : (
          <div
            className={`terminal-frame floor-${session.floor}${ended ? ' ended' : ''}`}
            data-testid="terminal-frame"
            data-floor={session.floor}
            data-controller={session.controller}
            data-renderer={renderer}
          >
            <FloorStrip session={session} link={link} online={online}>
              {/* An ended session has no floor left to hold. */}
              {ended ? null : <FloorControls session={session} busy={busy} offline={!online} onFloor={setFloor} onRelease={release} onInterrupt={interrupt} onFit={fit} />}
            </FloorStrip>
            {session.waitingForInput && !ended ? <QuestionBar session={session} onTakeOver={() => setFloor('takeover')} /> : null}
            <AioNote session={session} />
            <div className="terminal-body">
              <TerminalPane
                sessionId={session.id}
                floor={session.floor}
                ended={ended}
                own={isOwnSession(session)}
                online={online}
                events={events}
                onController={(c) => (controller.current = c)}
              />
              {scale.cropped ? (
                <div className="cropped-note" data-testid="cropped-note">
                  <WarningIcon />
                  Cropped: {session.cols}×{session.rows} does not fit this pane even at {scale.fontSize} px. Scroll to see the rest, or widen the window.
                </div>
              ) : null}
              {find.open && controller.current ? <FindBar search={controller.current.search} terminal={controller.current.term} focusSignal={find.signal} onClose={closeFind} /> : null}
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
        {panels.map((p) => (
          <aside key={p.id} className="session-side-panel" data-panel={p.id}>
            <p.Component session={session} />
          </aside>
        ))}
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

/** The band above the terminal that says, in words and colour, who may type right now, and what came of it. */
function FloorStrip({ session, link, online, children }: { session: SessionSummary; link: ViewLink; online: boolean; children: ReactNode }) {
  const ended = isEnded(session);
  const refusals = session.floor === 'takeover' ? refusalLines(session) : [];
  const lease = session.floorLeaseExpiresAt;
  const now = useNow(lease || refusals.length ? 1000 : null);
  const lastRefusal = Math.max(0, ...session.refusedBy.map((r) => Date.parse(r.last) || 0));
  return (
    <div className="floor-strip" data-testid="floor-banner" data-floor={session.floor} data-ended={ended}>
      <div className="strip-label">
        {ended ? (
          <>
            <strong>Ended</strong>
            <span className={`strip-text${session.exitCode ? ' strip-bad' : ''}`}>
              {session.exitCode === null ? 'The shell is gone.' : `The shell exited with code ${session.exitCode}.`} Its last screen stays until you dismiss it.
            </span>
          </>
        ) : (
          <>
            <FloorIcon floor={session.floor} />
            <strong>{isOwnSession(session) ? (session.floor === 'watch' ? 'Read only' : 'Yours') : FloorText[session.floor].short}</strong>
            <span className="strip-holder" data-testid="floor-holder">
              {floorHolder(session)}
            </span>
            <span className="strip-text">{floorBanner(session)}</span>
          </>
        )}
        {!online ? (
          <span className="view-link view-link-down" data-testid="view-link">
            Offline: the last screen received
          </span>
        ) : link !== 'live' ? (
          <span className={`view-link view-link-${link}`} data-testid="view-link">
            {link === 'connecting' ? 'Connecting…' : 'Disconnected — reconnecting…'}
          </span>
        ) : null}
      </div>
      {children}
      {refusals.length || (session.floorReason && !ended) || lease ? (
        <div className="strip-notes">
          {refusals.length ? (
            <span className="strip-note strip-refused" data-testid="refusal-note" role="status">
              {refusals.join('; ')}
              {lastRefusal ? <span className="strip-when"> · last {shortDuration(now - lastRefusal)} ago</span> : null}
            </span>
          ) : null}
          {session.floorReason && !ended ? (
            <span className="strip-note" data-testid="floor-reason">
              {session.floorReason}
            </span>
          ) : null}
          {lease ? (
            <span className="strip-note strip-lease" data-testid="floor-lease">
              No viewer of yours is connected: the floor goes back to {ownerLabel(session.owner)} in {secondsUntil(lease, now)} s.
            </span>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

/**
 * Closing an agent's live terminal ends its work, so it takes a second click that says what it kills;
 * dismissing an ended one (or closing your own) is a single click.
 */
function CloseButton({ session, store, disabled }: { session: SessionSummary; store: SessionStore; disabled: boolean }) {
  const toast = useToast();
  const ended = isEnded(session);
  const close = async () => {
    try {
      await api.closeSession(session.id);
      forgetScreen(session.id);
      store.remove(session.id);
    } catch (err) {
      toast(`Closing failed: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
    }
  };
  const victim = session.shellState === 'busy' ? (session.command?.command ?? 'the running program') : 'the shell';
  if (ended) {
    return (
      <button type="button" disabled={disabled} className="btn btn-primary" onClick={() => void close()} title="Remove this ended session">
        <CloseIcon />
        Dismiss
      </button>
    );
  }
  return (
    <ArmedButton
      needsConfirm={!isOwnSession(session)}
      className="btn-quiet"
      armedClassName="btn-danger"
      disabled={disabled}
      onConfirm={() => void close()}
      title="End this terminal and everything running in it"
      armedTitle={`Click again to end ${victim} and every process started in this terminal`}
      label={
        <>
          <CloseIcon />
          Close
        </>
      }
      armedLabel={
        <>
          <CloseIcon />
          <span className="armed-text">Really close? Kills {victim}</span>
        </>
      }
    />
  );
}
