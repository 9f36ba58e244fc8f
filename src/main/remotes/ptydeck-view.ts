import type WebSocket from 'ws';
import type { RawData } from 'ws';
import type { ViewerServerFrame } from '../../shared/types';
import { ApiError } from '../api/errors';
import type { UpgradeRequest } from '../api/server';
import { asBuffer, asText, isOpen, jsonObject, keepalive, sendJson } from '../api/ws-util';
import { closeReason, reasonOf } from './client';
import { RemoteRefusedError, type RemoteSocket } from './endpoint';
import { backoffDelay, RetryPolicy } from './link';
import type { PtydeckRemote } from './ptydeck-remote';

/**
 * A viewer's socket for a session on a remote ptydeck, relayed to the remote's own view socket.
 *
 * Frames pass through unchanged both ways (acks included: the remote's flow control governs the
 * stream). The relay remembers where the stream stands: the remote log offset of the next byte the
 * viewer expects (the last snapshot's or resume's offset, plus every binary byte since). When the
 * remote goes away the viewer's socket stays open, told `{"type":"remote","state":"offline"}`; the
 * relay retries with backoff (at once when the remote's events socket is back) and reattaches with
 * `?since=<offset>`, so the remote resumes from exactly that byte: nothing lost, nothing doubled. If the
 * remote no longer holds that byte (or is an older ptydeck without `since`), it sends a snapshot, which
 * resets the view.
 */
export async function relayPtydeckView(up: UpgradeRequest, remote: PtydeckRemote, remoteId: string): Promise<void> {
  const raw = up.query.get('since');
  const since = raw !== null && /^\d{1,16}$/.test(raw) ? Number(raw) : null;
  if (raw !== null && since === null) throw new ApiError(400, `since must be a log offset: a non-negative integer (got ${JSON.stringify(raw.slice(0, 40))})`);
  if (!remote.endpoint) throw new ApiError(502, `Remote ${remote.name} cannot be used: ${remote.reason}`, 'REMOTE_UNAUTHORIZED');
  // The first attach is made before the viewer's handshake completes, so that a session the remote
  // does not have is a plain 404 and a remote that is down a plain 502, as for a local session.
  let first: RemoteSocket;
  try {
    first = await remote.endpoint.socket(viewPath(remoteId, since));
  } catch (err) {
    if (err instanceof RemoteRefusedError && err.status === 404) throw new ApiError(404, `Session ${remote.name}/${remoteId} not found (on remote ${remote.name})`, 'NOT_FOUND');
    throw new ApiError(502, `Remote ${remote.name}: ${reasonOf(err).reason}`, 'REMOTE_UNREACHABLE');
  }
  let viewer: WebSocket;
  try {
    viewer = await up.accept();
  } catch (err) {
    first.ws.close(1000);
    throw err;
  }
  keepalive(viewer);
  new ViewRelay(viewer, remote, remoteId, since).begin(first);
}

const viewPath = (remoteId: string, since: number | null): string => `/api/sessions/${encodeURIComponent(remoteId)}/view${since === null ? '' : `?since=${since}`}`;

class ViewRelay {
  private upstream: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private ended = false;
  private readonly offOnline: () => void;
  private readonly offStop: () => void;

  constructor(
    private readonly viewer: WebSocket,
    private readonly remote: PtydeckRemote,
    private readonly remoteId: string,
    /** The remote log offset of the next byte the viewer expects; null until a snapshot says. */
    private position: number | null,
  ) {
    this.offOnline = remote.onOnline(() => {
      if (this.timer) {
        clearTimeout(this.timer);
        this.attach();
      }
    });
    // The remote was removed from the deck: its tabs go with it.
    this.offStop = remote.onStop(() => this.viewer.close(1000, 'remote removed'));
    viewer.on('message', (data, isBinary) => this.fromViewer(data, isBinary));
    viewer.once('close', () => this.end());
  }

  begin(first: RemoteSocket): void {
    this.adopt(first);
  }

  private attach(): void {
    this.timer = null;
    if (this.ended || !this.remote.endpoint) return;
    this.remote.endpoint.socket(viewPath(this.remoteId, this.position)).then(
      (socket) => {
        if (this.ended) return void socket.ws.close(1000);
        this.adopt(socket);
      },
      (err) => {
        if (this.ended) return;
        if (err instanceof RemoteRefusedError && err.status === 404) {
          // The remote is back but the session is not (a native session dies with its server).
          sendJson(this.viewer, { type: 'error', message: `Session ${this.remote.name}/${this.remoteId} is gone: the remote no longer has it` }, () => this.viewer.close(1000, 'session closed'));
          return;
        }
        this.wentDown(reasonOf(err).reason);
      },
    );
  }

  private adopt({ ws, listen }: RemoteSocket): void {
    this.upstream = ws;
    keepalive(ws);
    let announced = this.failures === 0;
    listen((data, isBinary) => {
      if (!announced) {
        announced = true;
        this.failures = 0;
        this.toViewer({ type: 'remote', state: 'online', reason: null });
      }
      this.fromRemote(data, isBinary);
    });
    ws.on('close', (code) => {
      if (this.upstream !== ws) return;
      this.upstream = null;
      if (this.ended) return;
      // 1000: the remote closed the view because the session was closed there.
      if (code === 1000) return void this.viewer.close(1000, 'session closed');
      this.wentDown(closeReason(code));
    });
  }

  private wentDown(reason: string): void {
    this.failures += 1;
    // Once per outage: the retries that follow change nothing the viewer shows.
    if (this.failures === 1) this.toViewer({ type: 'remote', state: 'offline', reason: `${this.remote.name}: ${reason}` });
    this.timer = setTimeout(() => this.attach(), backoffDelay(RetryPolicy.FirstDelayMs, this.failures));
  }

  private fromRemote(data: RawData, isBinary: boolean): void {
    if (!isOpen(this.viewer)) return;
    if (isBinary) {
      const buf = asBuffer(data);
      if (this.position !== null) this.position += buf.length;
      this.viewer.send(buf, { binary: true });
      return;
    }
    const text = asText(data);
    const frame = jsonObject(text);
    if (frame && (frame.type === 'snapshot' || frame.type === 'resume') && typeof frame.offset === 'number') this.position = frame.offset;
    if (frame?.type === 'resync') this.position = null;
    this.viewer.send(text);
  }

  private fromViewer(data: RawData, isBinary: boolean): void {
    const up = this.upstream;
    if (up && isOpen(up)) {
      up.send(isBinary ? data : asText(data), { binary: isBinary });
      return;
    }
    // Acks and sizes wait for the next attach (it starts its own accounting); keys are refused aloud.
    const frame = isBinary ? null : jsonObject(asText(data));
    if (isBinary || frame?.type === 'input') this.toViewer({ type: 'error', message: `Remote ${this.remote.name} is offline: your keys were not sent` });
  }

  private toViewer(frame: ViewerServerFrame): void {
    sendJson(this.viewer, frame);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.offOnline();
    this.offStop();
    if (this.timer) clearTimeout(this.timer);
    this.upstream?.close(1000);
    this.upstream = null;
  }
}
