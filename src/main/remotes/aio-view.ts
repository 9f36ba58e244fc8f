import type WebSocket from 'ws';
import type { RawData } from 'ws';
import { ViewerFlowControl, type ViewerServerFrame } from '../../shared/types';
import { ApiError } from '../api/errors';
import type { UpgradeRequest } from '../api/server';
import { asBuffer, asText, isOpen, jsonObject, keepalive, sendJson } from '../api/ws-util';
import { SessionConstants } from '../terminal/constants';
import type { AioRemote } from './aio-remote';
import { closeReason, deckId, reasonOf } from './client';
import { RemoteRefusedError, type RemoteSocket } from './endpoint';
import { backoffDelay, RetryPolicy } from './link';

/**
 * A viewer's socket for a terminal on an aio remote, speaking the deck's view protocol (snapshot, then
 * binary output, acks) on one side and AIO's terminal socket on the other.
 *
 * AIO allows one socket per terminal. The deck attaches plain (never `durable`, which would replace an
 * agent's socket; never `restore`). If an agent holds the terminal, AIO refuses the attach with
 * "Session already has an active WebSocket connection" and the agent's socket is untouched; the deck
 * then watches by polling the terminal's screen (GET .../screen, the current command's output) and the
 * tab says so, and it tries the socket again now and then in case the agent let go. If an agent later
 * takes the terminal over durably, AIO closes the deck's socket with `relay_replaced`, and the deck goes
 * back to polling. Keys go through the socket when the deck holds it, else through REST input, which
 * needs no socket and disturbs none.
 *
 * An AIO terminal has no offsets to resume from: a new attach repaints the screen, and every switch
 * (socket, polling, reconnect) starts with a fresh snapshot frame, which resets the view, so nothing
 * is ever shown twice.
 */
export const AioViewTiming = {
  /** Polling the screen this often: fast enough to follow a command, light on the sandbox. */
  ScreenPollMs: 1000,
  /** While polling, try the socket again this often (the agent may have let go of it). */
  ReattachMs: 5000,
} as const;

/** aiod's listing carries no size: such a terminal is shown at the size AIO opens one with. */
export const DefaultSize = { cols: 80, rows: 24 } as const;

export const ERR_AIO_HELD = /already has an active WebSocket connection/i;

export async function relayAioView(up: UpgradeRequest, remote: AioRemote, remoteId: string): Promise<void> {
  const known = remote.known(remoteId);
  if (!known) throw new ApiError(404, `Session ${deckId(remote.name, remoteId)} not found (on remote ${remote.name})`, 'NOT_FOUND');
  if (!remote.endpoint) throw new ApiError(502, `Remote ${remote.name} cannot be used: ${remote.status().reason}`, 'REMOTE_UNAUTHORIZED');
  const viewer = await up.accept();
  keepalive(viewer);
  new AioView(viewer, remote, remoteId).start();
}

type Mode = 'socket' | 'polling' | 'down';

class AioView {
  private mode: Mode | null = null;
  private upstream: WebSocket | null = null;
  private binaryInput = true;
  private pollTimer: NodeJS.Timeout | null = null;
  private attachTimer: NodeJS.Timeout | null = null;
  private attaching = false;
  private failures = 0;
  private lastScreen: string | null = null;
  private sent = 0;
  private acked = 0;
  private paused = false;
  private ended = false;
  /** REST inputs go one after another, in the order typed. */
  private inputs: Promise<void> = Promise.resolve();
  private readonly offStop: () => void;

  constructor(
    private readonly viewer: WebSocket,
    private readonly remote: AioRemote,
    private readonly remoteId: string,
  ) {
    this.offStop = remote.onStop(() => this.viewer.close(1000, 'remote removed'));
    viewer.on('message', (data, isBinary) => this.fromViewer(data, isBinary));
    viewer.once('close', () => this.end());
  }

  start(): void {
    this.attach();
  }

  private get api() {
    return this.remote.known(this.remoteId)?.api ?? 'v2';
  }

  private attach(): void {
    this.attachTimer = null;
    if (this.ended || this.attaching || !this.remote.endpoint) return;
    this.attaching = true;
    const id = encodeURIComponent(this.remoteId);
    // Plain attach only: `durable` would take the terminal from an agent that holds it.
    const v2 = this.api === 'v2';
    const path = v2 ? `/v2/pty/sessions/${id}/ws?protocol=binary` : `/v1/shell/ws?session_id=${id}`;
    this.remote.endpoint.socket(path).then(
      (socket) => {
        this.attaching = false;
        if (this.ended) return void socket.ws.close(1000);
        this.binaryInput = v2;
        this.adopt(socket);
      },
      (err) => {
        this.attaching = false;
        if (this.ended) return;
        if (err instanceof RemoteRefusedError && err.status === 404) return this.gone();
        if (this.mode === 'polling') return this.scheduleReattach();
        this.down(reasonOf(err).reason);
      },
    );
  }

  private adopt({ ws, listen }: RemoteSocket): void {
    // A sandbox that vanishes without closing the connection is noticed by its missing pongs.
    keepalive(ws);
    let ready = false;
    let refused = false;
    let replaced = false;
    const becomeReady = (): void => {
      if (ready) return;
      ready = true;
      this.upstream = ws;
      this.failures = 0;
      if (this.mode === 'down') this.toViewer({ type: 'remote', state: 'online', reason: null });
      this.switchTo('socket');
    };
    listen((data, isBinary) => {
      if (isBinary) {
        becomeReady();
        return this.forward(asBuffer(data));
      }
      const frame = jsonObject(asText(data));
      if (!frame) return;
      switch (frame.type) {
        case 'ready':
          return becomeReady();
        case 'output':
        case 'restore_output':
          becomeReady();
          if (typeof frame.data === 'string') this.forward(Buffer.from(frame.data, 'utf8'));
          return;
        case 'error': {
          const message = typeof frame.data === 'string' ? frame.data : 'error';
          if (!ready && ERR_AIO_HELD.test(message)) {
            refused = true;
            return;
          }
          if (!ready && /not found/i.test(message)) return this.gone();
          return this.toViewer({ type: 'error', message: `${this.remote.name}: ${message}` });
        }
        case 'relay_replaced':
          // An agent attached durably and took the terminal: it is theirs; watch by polling.
          replaced = true;
          return;
        case 'exit':
          return this.toViewer({ type: 'exit', exitCode: typeof frame.exit_code === 'number' ? frame.exit_code : null });
      }
    });
    ws.on('close', (code) => {
      if (this.upstream === ws) this.upstream = null;
      if (this.ended) return;
      if (refused || replaced) return this.poll();
      if (!ready) return this.down(`the terminal socket closed before it was ready (${code})`);
      if (code === 1000) return; // the shell ended (an exit frame came first) or the terminal was closed
      this.down(closeReason(code));
    });
  }

  private switchTo(mode: Mode): void {
    if (this.mode === mode) return;
    this.mode = mode;
    if (mode !== 'polling' && this.pollTimer) {
      clearTimeout(this.pollTimer);
      this.pollTimer = null;
    }
    if (mode === 'down') {
      this.remote.setWatch(this.remoteId, this, null);
      return;
    }
    this.remote.setWatch(this.remoteId, this, mode);
    this.reset();
  }

  /** A fresh start for the view: reset at the terminal's size (a new attach repaints; a poll redraws). */
  private reset(): void {
    const s = this.remote.known(this.remoteId)?.summary;
    this.sent = this.acked = 0;
    this.lastScreen = null;
    this.resumeUpstream();
    this.toViewer({ type: 'snapshot', data: '', cols: s?.cols ?? DefaultSize.cols, rows: s?.rows ?? DefaultSize.rows, offset: 0 });
  }

  // ------------------------------------------------------------------ polling

  /** Watches by polling (the tab says so, through the summary's `remote.watch`). */
  private poll(): void {
    if (this.mode !== 'polling') {
      if (this.mode === 'down') this.toViewer({ type: 'remote', state: 'online', reason: null });
      this.switchTo('polling');
      void this.pollOnce();
    }
    this.scheduleReattach();
  }

  private scheduleReattach(): void {
    if (this.attachTimer || this.ended) return;
    this.attachTimer = setTimeout(() => this.attach(), AioViewTiming.ReattachMs);
  }

  private async pollOnce(): Promise<void> {
    this.pollTimer = null;
    if (this.ended || this.mode !== 'polling') return;
    try {
      const id = encodeURIComponent(this.remoteId);
      const answer = this.api === 'v2' ? await this.remote.call('GET', `/v2/pty/sessions/${id}/screen`) : await this.remote.call('POST', '/v1/shell/view', { id: this.remoteId });
      const data = this.remote.check(answer, this.remoteId) as { output?: unknown; command?: unknown } | null;
      if (this.mode !== 'polling') return;
      const output = typeof data?.output === 'string' ? data.output : '';
      const command = typeof data?.command === 'string' && data.command ? `$ ${data.command}\n` : '';
      const screen = command + output;
      if (screen !== this.lastScreen) {
        this.lastScreen = screen;
        this.forward(Buffer.from(`\x1b[H\x1b[2J\x1b[3J${screen.replace(/\r?\n/g, '\r\n')}`, 'utf8'));
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return this.gone();
      // A failed poll is retried on the next tick; the listing reports the remote's state.
    }
    if (!this.ended && this.mode === 'polling') this.pollTimer = setTimeout(() => void this.pollOnce(), AioViewTiming.ScreenPollMs);
  }

  // ------------------------------------------------------------------ the viewer

  private forward(bytes: Buffer): void {
    if (!isOpen(this.viewer)) return;
    this.sent += bytes.length;
    this.viewer.send(bytes, { binary: true });
    // AIO's socket has no flow control of its own: stop reading it while the viewer is behind.
    if (this.upstream && !this.paused && this.sent - this.acked > ViewerFlowControl.HighWatermarkBytes) {
      this.paused = true;
      this.upstream.pause();
    }
  }

  private resumeUpstream(): void {
    if (this.paused) {
      this.paused = false;
      this.upstream?.resume();
    }
  }

  private fromViewer(data: RawData, isBinary: boolean): void {
    const frame = isBinary ? null : jsonObject(asText(data));
    try {
      if (!frame) throw new ApiError(400, 'viewer frames are JSON objects: input, resize or ack');
      switch (frame.type) {
        case 'ack':
          if (typeof frame.bytes !== 'number' || !(frame.bytes >= 0)) throw new ApiError(400, 'ack needs a non-negative number of bytes');
          this.acked = Math.min(this.sent, this.acked + frame.bytes);
          if (this.sent - this.acked <= ViewerFlowControl.HighWatermarkBytes) this.resumeUpstream();
          return;
        case 'input':
          if (typeof frame.data !== 'string') throw new ApiError(400, 'input needs a string "data"');
          this.keyboardAllowed();
          return this.type(frame.data);
        case 'resize': {
          const { cols, rows } = frame;
          if (!isDim(cols, SessionConstants.MaxCols) || !isDim(rows, SessionConstants.MaxRows)) throw new ApiError(400, 'resize needs integer cols and rows');
          this.keyboardAllowed();
          return this.resize(cols, rows);
        }
        default:
          throw new ApiError(400, `unknown frame type ${JSON.stringify(frame.type)}`);
      }
    } catch (err) {
      this.toViewer({ type: 'error', message: (err as Error).message });
    }
  }

  private keyboardAllowed(): void {
    if (this.remote.floorOf(this.remoteId) === 'watch') throw new ApiError(409, 'This session is in watch mode: switch to type to send keys');
  }

  private type(data: string): void {
    const up = this.upstream;
    if (this.mode === 'socket' && up && isOpen(up)) {
      if (this.binaryInput) up.send(Buffer.from(data, 'utf8'), { binary: true });
      else up.send(JSON.stringify({ type: 'input', data }));
      return;
    }
    if (this.mode === 'down') return this.toViewer({ type: 'error', message: `Remote ${this.remote.name} is offline: your keys were not sent` });
    this.inputs = this.inputs.then(
      () => this.remote.input(this.remoteId, data),
    ).catch((err: Error) => this.toViewer({ type: 'error', message: `Your keys did not reach ${this.remote.name}: ${err.message}` }));
  }

  private resize(cols: number, rows: number): void {
    const up = this.upstream;
    if (this.mode === 'socket' && up && isOpen(up)) {
      up.send(JSON.stringify({ type: 'resize', cols, rows }));
      this.toViewer({ type: 'size', cols, rows });
      return;
    }
    if (this.api !== 'v2') return;
    void this.remote
      .call('PATCH', `/v2/pty/sessions/${encodeURIComponent(this.remoteId)}`, { cols, rows })
      .then((a) => {
        this.remote.check(a, this.remoteId);
        this.toViewer({ type: 'size', cols, rows });
      })
      .catch((err: Error) => this.toViewer({ type: 'error', message: err.message }));
  }

  private toViewer(frame: ViewerServerFrame): void {
    sendJson(this.viewer, frame);
  }

  // ------------------------------------------------------------------ failure

  private down(reason: string): void {
    this.switchTo('down');
    this.failures += 1;
    if (this.failures === 1) this.toViewer({ type: 'remote', state: 'offline', reason: `${this.remote.name}: ${reason}` });
    if (!this.attachTimer) this.attachTimer = setTimeout(() => this.attach(), backoffDelay(RetryPolicy.FirstDelayMs, this.failures));
  }

  private gone(): void {
    sendJson(this.viewer, { type: 'error', message: `Session ${this.remote.name}/${this.remoteId} is gone: the remote no longer has it` }, () => this.viewer.close(1000, 'session closed'));
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.offStop();
    if (this.pollTimer) clearTimeout(this.pollTimer);
    if (this.attachTimer) clearTimeout(this.attachTimer);
    this.remote.setWatch(this.remoteId, this, null);
    this.upstream?.close(1000);
    this.upstream = null;
  }
}

const isDim = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max;
