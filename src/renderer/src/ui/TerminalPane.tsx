import { useEffect, useRef } from 'react';
import '@xterm/xterm/css/xterm.css';
import type { FloorMode } from '../../../shared/types';
import { TerminalController, type TerminalEvents } from '../terminal/terminal-controller';

interface TerminalPaneProps {
  sessionId: string;
  floor: FloorMode;
  ended: boolean;
  /** The person's own terminal (its PTY follows the pane); an agent's keeps the agent's size. */
  own: boolean;
  /** The events socket is up: the terminal socket may try to connect. */
  online: boolean;
  events: TerminalEvents;
  /** The controller while mounted, null after: for find, focus and copy from the surrounding UI. */
  onController(c: TerminalController | null): void;
}

/**
 * The DOM home of one TerminalController. It lives exactly as long as the tab is shown, so a hidden tab
 * holds no socket and no GPU context.
 */
export function TerminalPane({ sessionId, floor, ended, own, online, events, onController }: TerminalPaneProps) {
  const host = useRef<HTMLDivElement>(null);
  const controller = useRef<TerminalController | null>(null);
  // The controller outlives renders; it must always call the latest handlers.
  const latest = useRef({ events, onController, floor, ended, own, online });
  latest.current = { events, onController, floor, ended, own, online };

  useEffect(() => {
    const forward: TerminalEvents = {
      onLink: (l) => latest.current.events.onLink(l),
      onNotice: (m) => latest.current.events.onNotice(m),
      onRenderer: (k) => latest.current.events.onRenderer(k),
      onFindShortcut: () => latest.current.events.onFindShortcut(),
      onReadOnlyKey: () => latest.current.events.onReadOnlyKey(),
      onScale: (s) => latest.current.events.onScale(s),
      onOpenLink: (uri) => latest.current.events.onOpenLink(uri),
    };
    const { floor: f, ended: e, own: o, online: on } = latest.current;
    const c = new TerminalController(sessionId, host.current!, { floor: f, ended: e, own: o, online: on }, forward);
    controller.current = c;
    latest.current.onController(c);
    return () => {
      controller.current = null;
      latest.current.onController(null);
      c.dispose();
    };
  }, [sessionId]);

  useEffect(() => {
    const c = controller.current;
    if (!c) return;
    c.setFloor(floor, ended);
    if (!ended && floor !== 'watch') c.focus();
  }, [floor, ended]);

  useEffect(() => {
    controller.current?.setOnline(online);
  }, [online]);

  return (
    <div className={`terminal-scroll${own ? ' fit-pty' : ' fit-font'}`}>
      <div className="terminal-host" data-testid="terminal" data-session-id={sessionId} ref={host} />
    </div>
  );
}
