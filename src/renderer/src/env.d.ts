/** What the Electron preload (src/preload/index.ts) exposes; absent when the viewer runs as a web page. */
interface PtydeckBridge {
  /** The server's origin, or '' for the page's own origin. */
  readonly apiBase: string;
  /** The admin token; '' when the page authenticates by cookie. */
  readonly token: string;
  notify?(title: string, body: string): void;
}

interface Window {
  ptydeck?: PtydeckBridge;
  /** Test hooks (see terminal/test-hooks.ts). */
  __ptydeckTerminalText?: (sessionId: string) => string | null;
  __ptydeckTerminalRenderer?: (sessionId: string) => 'webgl' | 'dom' | null;
  __ptydeckTerminalSelection?: (sessionId: string) => string | null;
  __ptydeckTerminalSize?: (sessionId: string) => { cols: number; rows: number } | null;
  __ptydeckTerminalColor?: (sessionId: string, text: string) => { mode: 'default' | 'palette' | 'rgb'; color: number } | null;
  /** The replay's screen text and position (see replay/ReplayView.tsx). */
  __ptydeckReplayText?: () => string | null;
  __ptydeckReplayState?: () => { time: number; duration: number; playing: boolean; speed: number } | null;
}
