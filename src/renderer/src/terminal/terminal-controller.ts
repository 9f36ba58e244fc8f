import { Terminal, type IDisposable } from '@xterm/xterm';
import { SearchAddon } from '@xterm/addon-search';
import { SerializeAddon } from '@xterm/addon-serialize';
import { Unicode11Addon } from '@xterm/addon-unicode11';
import { WebLinksAddon } from '@xterm/addon-web-links';
import type { FloorMode, ViewerClientFrame, ViewerServerFrame } from '../../../shared/types';
import { wsUrl } from '../api/connection';
import { ReconnectingSocket } from '../api/reconnecting-socket';
import { AckBatcher } from './ack-batcher';
import { swallowTerminalQueries } from './query-guard';
import { styleChannelFrame } from './pipe-channels';
import { attachRenderer, type RendererKind } from './renderer-choice';
import { shortcutOf, wouldType } from './shortcuts';
import { keepScreen, lastScreen, ScreenCacheConstants } from './screen-cache';
import { roomIn, scaleToFit, sizeForRoom } from './sizing';
import { exposeForTests } from './test-hooks';
import { terminalFont, terminalTheme } from './theme';

export type ViewLink = 'connecting' | 'live' | 'down';

export interface TerminalEvents {
  onLink(link: ViewLink): void;
  /** Something the person should read briefly: a refusal from the server, a clipboard problem. */
  onNotice(message: string): void;
  onRenderer(kind: RendererKind): void;
  onFindShortcut(): void;
  /** The person typed while only watching. */
  onReadOnlyKey(): void;
  /** The font the whole screen fits at, and whether even the smallest leaves it cropped (see sizing.ts). */
  onScale(scale: { fontSize: number; cropped: boolean }): void;
  /** The person clicked a link in the terminal (a URL in the text, or an OSC 8 hyperlink's real target). */
  onOpenLink(uri: string): void;
}

export const TerminalTiming = {
  /** Wait for a window drag to settle before resizing the PTY or the font (each PTY resize makes the shell redraw). */
  FitDebounceMs: 120,
} as const;

const MaxCols = 1000;
const MaxRows = 500;

export interface TerminalOptions {
  floor: FloorMode;
  ended: boolean;
  /** The person's own terminal: its PTY follows the window. An agent's keeps the agent's size. */
  own: boolean;
  /** The events socket is up; while it is not, the view socket waits for it (see setOnline). */
  online: boolean;
}

/**
 * One open terminal tab: an xterm.js instance and its view socket (/api/sessions/{id}/view).
 *
 * Size policy: the PTY has one size and this view renders exactly at it (snapshot and `size` frames).
 * An agent's terminal keeps the agent's size whatever the person does: the view scales its font so the
 * whole screen fits the pane (sizing.ts), and resizes the PTY only when the person asks
 * (`fitToWindow`, "Fit to my window"); the server gives the agent its size back on release. The
 * person's own terminal is fitted to the pane whenever they may type, as any terminal window is.
 */
export class TerminalController {
  readonly term: Terminal;
  readonly search: SearchAddon;
  private readonly serializer = new SerializeAddon();
  private readonly socket: ReconnectingSocket;
  private readonly acks: AckBatcher;
  private readonly disposables: IDisposable[] = [];
  private readonly resizeObserver: ResizeObserver;
  private readonly unexpose: () => void;
  private inspect: { term: Terminal; renderer: RendererKind };
  private fitTimer: ReturnType<typeof setTimeout> | null = null;
  private floor: FloorMode;
  private ended: boolean;
  private readonly own: boolean;
  /** The element whose room the terminal fits (the scrolling pane around the host). */
  private readonly pane: HTMLElement;
  /** The PTY's size as the server last told us; null before the first snapshot. */
  private ptySize: { cols: number; rows: number } | null = null;
  /** A session on pipes: output frames carry a channel byte, and lines end in a bare LF. */
  private channels = false;
  /**
   * The log offset of the next byte this view expects (the snapshot's offset plus every log byte parsed
   * since): a reconnect asks `?since=` it and goes on without a repaint. Null until a snapshot, or
   * after a resync.
   */
  private position: number | null = null;
  private disposed = false;

  constructor(
    readonly sessionId: string,
    private readonly host: HTMLElement,
    initial: TerminalOptions,
    private readonly events: TerminalEvents,
  ) {
    this.floor = initial.floor;
    this.ended = initial.ended;
    this.own = initial.own;
    this.pane = host.parentElement ?? host;
    this.term = new Terminal({
      ...terminalFont,
      theme: terminalTheme,
      // Unicode 11 widths and search highlights use APIs xterm still calls proposed.
      allowProposedApi: true,
      scrollback: 5000,
      cursorBlink: false,
      disableStdin: !this.mayType,
      drawBoldTextInBrightColors: false,
      minimumContrastRatio: 1,
      rightClickSelectsWord: true,
      macOptionIsMeta: true,
      // OSC 8 hyperlinks: the text shown may say anything; the target goes to the person to confirm.
      linkHandler: { activate: (ev, uri) => this.linkClicked(ev, uri), allowNonHttpProtocols: false },
    });
    this.search = new SearchAddon({ highlightLimit: 2000 });
    this.term.loadAddon(this.serializer);
    this.term.loadAddon(this.search);
    this.term.loadAddon(new Unicode11Addon());
    this.term.unicode.activeVersion = '11';
    this.term.loadAddon(new WebLinksAddon((ev, uri) => this.linkClicked(ev, uri)));
    this.term.open(host);

    this.inspect = { term: this.term, renderer: 'dom' };
    this.inspect.renderer = attachRenderer(this.term, (kind) => this.rendererChanged(kind));
    this.unexpose = exposeForTests(sessionId, this.inspect);
    events.onRenderer(this.inspect.renderer);

    this.disposables.push(
      swallowTerminalQueries(this.term),
      this.term.onData((data) => this.sendInput(data)),
    );
    this.term.attachCustomKeyEventHandler((ev) => this.onKey(ev));

    // The last screen this tab showed, until the server's snapshot replaces it (and while it cannot).
    const cached = lastScreen(sessionId);
    if (cached) {
      this.term.resize(cached.cols, cached.rows);
      this.term.write(cached.data);
    }

    this.acks = new AckBatcher((bytes) => this.send({ type: 'ack', bytes }));
    this.socket = new ReconnectingSocket(() => wsUrl(`/api/sessions/${encodeURIComponent(sessionId)}/view${this.position === null ? '' : `?since=${this.position}`}`), {
      onOpen: () => this.acks.reset(),
      onMessage: (data) => (typeof data === 'string' ? this.onFrame(data) : this.onOutput(data)),
      onDown: () => events.onLink('down'),
      // 1000 is the server closing the view because the session was closed: nothing to come back to.
      shouldReconnect: (ev) => ev.code !== 1000,
    });
    events.onLink('connecting');
    this.socket.hold(!initial.online);
    this.socket.start();

    this.resizeObserver = new ResizeObserver(() => this.scheduleFit());
    this.resizeObserver.observe(this.pane);
    this.scheduleFit(0);
  }

  private get mayType(): boolean {
    return !this.ended && this.floor !== 'watch';
  }

  setFloor(floor: FloorMode, ended: boolean): void {
    this.floor = floor;
    this.ended = ended;
    this.term.options.disableStdin = !this.mayType;
    this.scheduleFit(0);
  }

  /** The events socket is down (or back): wait for it instead of knocking on a dead server alone. */
  setOnline(online: boolean): void {
    this.socket.hold(!online);
  }

  /**
   * "Fit to my window": resize the PTY to fill this pane at the normal font. For an agent's terminal
   * only on the person's word (and only while they may type); the server gives the agent its own size
   * back on release.
   */
  fitToWindow(): boolean {
    if (!this.mayType || !this.socket.open) return false;
    const size = sizeForRoom(this.term, roomIn(this.pane));
    if (!size) return false;
    this.send({ type: 'resize', cols: Math.min(MaxCols, size.cols), rows: Math.min(MaxRows, size.rows) });
    return true;
  }

  focus(): void {
    this.term.focus();
  }

  private async copySelection(): Promise<void> {
    const text = this.term.getSelection();
    if (!text) return;
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      this.events.onNotice('The clipboard refused the copy; select the text and use the browser’s Copy instead.');
    }
  }

  private async pasteClipboard(): Promise<void> {
    if (!this.mayType) {
      this.events.onReadOnlyKey();
      return;
    }
    try {
      const text = await navigator.clipboard.readText();
      if (text) this.term.paste(text);
    } catch {
      this.events.onNotice('The clipboard cannot be read here; allow clipboard access, or paste with the browser’s menu.');
    }
  }

  dispose(): void {
    if (this.disposed) return;
    if (this.ptySize) {
      try {
        keepScreen(this.sessionId, { data: this.serializer.serialize({ scrollback: ScreenCacheConstants.ScrollbackLines }), cols: this.term.cols, rows: this.term.rows });
      } catch {
        // A terminal that never rendered has nothing worth keeping.
      }
    }
    this.disposed = true;
    if (this.fitTimer) clearTimeout(this.fitTimer);
    this.resizeObserver.disconnect();
    this.socket.stop();
    this.acks.dispose();
    this.unexpose();
    this.disposables.forEach((d) => d.dispose());
    this.term.dispose();
  }

  private onOutput(buf: ArrayBuffer): void {
    const parsed = this.acks.onParsed(buf.byteLength);
    // A pipe session's frame starts with its channel byte, which is not in the log.
    if (this.position !== null) this.position += buf.byteLength - (this.channels ? 1 : 0);
    if (!this.channels) {
      // Straight into xterm's write queue: no copying, no decoding here.
      this.term.write(new Uint8Array(buf), parsed);
      return;
    }
    const chunk = styleChannelFrame(new Uint8Array(buf));
    if (chunk.prefix) this.term.write(chunk.prefix);
    this.term.write(chunk.data);
    this.term.write(chunk.suffix, parsed);
  }

  private setChannels(on: boolean): void {
    this.channels = on;
    // Pipes have no line discipline to turn LF into CR LF; the view does it.
    this.term.options.convertEol = on;
  }

  private onFrame(text: string): void {
    let frame: ViewerServerFrame;
    try {
      frame = JSON.parse(text) as ViewerServerFrame;
    } catch {
      return;
    }
    switch (frame.type) {
      case 'snapshot':
        this.position = frame.offset;
        this.setChannels(frame.channels === true);
        this.showSnapshot(frame.data, frame.cols, frame.rows);
        return;
      case 'resume':
        // The server goes on from the byte we had: keep the screen as it is.
        this.position = frame.offset;
        this.setChannels(frame.channels === true);
        this.acks.reset();
        this.ptySize = { cols: frame.cols, rows: frame.rows };
        this.resizeInStream(frame.cols, frame.rows);
        this.socket.markHealthy();
        this.events.onLink('live');
        return;
      case 'remote':
        // A remote session's host went away or came back; the socket to the deck stays open.
        if (frame.state === 'offline') this.events.onLink('down');
        return;
      case 'size':
        this.ptySize = { cols: frame.cols, rows: frame.rows };
        this.resizeInStream(frame.cols, frame.rows);
        return;
      case 'resync':
        // A fresh snapshot follows; until then nothing we parse counts for the server.
        this.acks.reset();
        this.position = null;
        return;
      case 'exit':
        this.ended = true;
        this.term.options.disableStdin = true;
        return;
      case 'error':
        this.events.onNotice(frame.message);
        return;
    }
  }

  private showSnapshot(data: string, cols: number, rows: number): void {
    this.acks.reset();
    this.ptySize = { cols, rows };
    // Through the write queue, not term.reset(): output queued before the snapshot must not be
    // parsed on top of it. RIS clears screen, scrollback and modes; the resize lands between the two.
    this.term.write('\x1bc');
    this.resizeInStream(cols, rows);
    this.term.write(data, () => {
      if (this.disposed) return;
      this.socket.markHealthy();
      this.events.onLink('live');
      if (this.mayType) this.scheduleFit(0);
    });
  }

  /** Resize once everything written so far is parsed: that output was laid out at the old size. */
  private resizeInStream(cols: number, rows: number): void {
    this.term.write('', () => {
      if (this.disposed) return;
      if (this.term.cols !== cols || this.term.rows !== rows) this.term.resize(cols, rows);
      this.scheduleFit(0);
    });
  }

  private sendInput(data: string): void {
    if (!this.mayType) return;
    if (!this.send({ type: 'input', data })) this.events.onNotice('Not connected to this terminal: your keys were not sent.');
  }

  private send(frame: ViewerClientFrame): boolean {
    return this.socket.send(frame);
  }

  private scheduleFit(delay: number = TerminalTiming.FitDebounceMs): void {
    if (this.fitTimer) clearTimeout(this.fitTimer);
    this.fitTimer = setTimeout(() => {
      this.fitTimer = null;
      this.fitToContainer();
    }, delay);
  }

  private fitToContainer(): void {
    if (this.disposed) return;
    const room = roomIn(this.pane);
    if (this.own) {
      // The person's own terminal: the normal font, and the PTY follows the pane while they may type.
      if (this.term.options.fontSize !== terminalFont.fontSize) this.term.options.fontSize = terminalFont.fontSize;
      this.reportScale({ fontSize: terminalFont.fontSize, cropped: false });
      if (!this.mayType || !this.ptySize || !this.socket.open) return;
      const size = sizeForRoom(this.term, room);
      if (!size) return;
      const cols = Math.min(MaxCols, size.cols);
      const rows = Math.min(MaxRows, size.rows);
      if (cols === this.ptySize.cols && rows === this.ptySize.rows) return;
      // The server resizes the PTY and answers with a `size` frame, which resizes this view in order.
      this.send({ type: 'resize', cols, rows });
      return;
    }
    this.reportScale(scaleToFit(this.term, room));
  }

  private reportScale(scale: { fontSize: number; cropped: boolean }): void {
    this.host.dataset.fontSize = String(scale.fontSize);
    this.host.dataset.cropped = String(scale.cropped);
    this.events.onScale(scale);
  }

  private onKey(ev: KeyboardEvent): boolean {
    const action = shortcutOf(ev);
    if (action) {
      // Every phase of the combination is ours, so neither xterm nor the browser acts on it.
      ev.preventDefault();
      if (ev.type === 'keydown') {
        if (action === 'copy') void this.copySelection();
        else if (action === 'paste') void this.pasteClipboard();
        else this.events.onFindShortcut();
      }
      return false;
    }
    if (ev.type !== 'keydown') return true;
    // Ctrl+C over a selection copies it, as in most terminals; with nothing selected it interrupts.
    if (ev.ctrlKey && !ev.shiftKey && !ev.altKey && ev.key.toLowerCase() === 'c' && this.term.hasSelection()) {
      ev.preventDefault();
      void this.copySelection().then(() => this.term.clearSelection());
      return false;
    }
    if (!this.mayType && wouldType(ev)) this.events.onReadOnlyKey();
    return true;
  }

  /**
   * A link in a terminal is the output's word (an agent's, or a program's), not the person's: it opens
   * only after the person has seen where it goes and said yes (SessionView asks). Only a deliberate
   * primary click counts (xterm underlines on hover).
   */
  private linkClicked(ev: MouseEvent, uri: string): void {
    if (ev.button !== 0) return;
    this.events.onOpenLink(uri);
  }

  private rendererChanged(kind: RendererKind): void {
    this.inspect.renderer = kind;
    this.events.onRenderer(kind);
  }
}
