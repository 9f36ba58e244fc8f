import type { WebSocket } from 'ws';
import { ViewerFlowControl, type ViewerEvent, type ViewerServerFrame } from '../../shared/types';
import { SessionConstants } from '../terminal/constants';
import type { LogCursor } from '../terminal/output-hub';
import type { Session } from '../terminal/session';
import { person } from '../terminal/actor';
import { ApiError } from './errors';
import { headedFrame, ownFrame, sendFrame } from './frame-blocks';
import { ViewerPace } from './viewer-pace';
import type { ApiContext, Door, WsRoute } from './server';
import { asText, attachCursor, isOpen, jsonObject, keepalive, sendJson } from './ws-util';

/**
 * The viewer's two sockets.
 *
 * `/api/events`: the session list, pushed. `hello` with every visible session, then `session` whenever
 * one changes (coalesced per session) and `closed` when one goes. No polling anywhere.
 *
 * `/api/sessions/{id}/view` (the person's credential only): a screen snapshot (headless xterm
 * serialize), then raw output as binary frames, continuing exactly from the snapshot's offset. Any
 * number of viewers may watch one session beside the agent's own socket.
 *
 * Flow control is by acknowledgement (as VS Code's): the viewer acks the bytes it has parsed, and the
 * server sends no more than HighWatermarkBytes ahead of its acks. A slow viewer therefore never holds
 * back the shell, the agent or other viewers; when it is further behind than ResyncBytes and would need
 * more than ResyncAfterMs to catch up at the pace it acks (viewer-pace.ts), or falls behind what the log
 * still holds, it gets a `resync` and a fresh snapshot instead of the backlog.
 */
export const ViewerConstants = {
  /** Behind by less than this, a viewer is always fed the backlog. */
  ResyncBytes: 2 * 1024 * 1024,
  /** Behind by more, it is resynced from a snapshot if catching up at its pace would take longer than this. */
  ResyncAfterMs: 500,
  /** Coalesce a session's change notifications on the events socket. */
  EventCoalesceMs: 50,
  /**
   * How much recent output a viewer of a pipe session starts with (it has no screen to snapshot). Below
   * ResyncBytes, so the replay itself never counts as falling behind.
   */
  PipeReplayBytes: 1024 * 1024,
} as const;

export const viewerWsDoor: Door = {
  register() {
    // WebSocket only.
  },
  wsRoutes(ctx: ApiContext): WsRoute[] {
    return [
      {
        path: '/api/events',
        handle: async (up) => {
          const ws = await up.accept();
          keepalive(ws);
          if (up.principal.kind === 'admin') ws.once('close', ctx.presence.enter());
          serveEvents(ctx, ws, up.principal);
        },
      },
      {
        path: '/api/sessions/:id/view',
        handle: async (up) => {
          if (up.principal.kind !== 'admin') throw new ApiError(403, "The viewer socket needs the person's (admin) credential", 'FORBIDDEN');
          const there = ctx.elsewhere?.route(up.params.id);
          if (there) return there.view(up);
          const since = sinceOf(up.query);
          const session = ctx.sessionFor(up.principal, up.params.id, 'native');
          const ws = await up.accept();
          keepalive(ws);
          ws.once('close', ctx.presence.enter());
          await serveView(session, ws, since);
        },
      },
    ];
  },
};

function serveEvents(ctx: ApiContext, ws: WebSocket, principal: Parameters<ApiContext['canSee']>[0]): void {
  const send = (e: ViewerEvent): void => sendJson(ws, e);
  // The person also sees the sessions of remotes (remotes/), from what the deck already knows of them.
  const elsewhere = principal.kind === 'admin' ? ctx.elsewhere : null;
  send({ type: 'hello', principal: principal.name, sessions: [...ctx.visibleSessions(principal).map((s) => s.summary()), ...(elsewhere?.list() ?? [])] });
  if (elsewhere) send({ type: 'remotes', remotes: elsewhere.remotes() });
  const offElsewhere = elsewhere?.watch(send);
  const pending = new Map<string, Session>();
  let timer: NodeJS.Timeout | null = null;
  const flush = (): void => {
    timer = null;
    for (const s of pending.values()) {
      if (ctx.manager.get(s.id) === s) send({ type: 'session', session: s.summary() });
    }
    pending.clear();
  };
  const changed = (s: Session): void => {
    if (!ctx.canSee(principal, s)) return;
    pending.set(s.id, s);
    timer ??= setTimeout(flush, ViewerConstants.EventCoalesceMs);
  };
  const offs = [
    ctx.manager.events.on('created', changed),
    ctx.manager.events.on('changed', changed),
    ctx.manager.events.on('closed', ({ session }) => {
      if (!ctx.canSee(principal, session)) return;
      pending.delete(session.id);
      send({ type: 'closed', id: session.id });
    }),
  ];
  ws.on('message', () => {
    // The events socket is one-way; anything sent is ignored.
  });
  ws.once('close', () => {
    offs.forEach((off) => off());
    offElsewhere?.();
    if (timer) clearTimeout(timer);
  });
}

/** `?since=N`: the log offset a reconnecting viewer has shown up to (see serveView). */
function sinceOf(q: URLSearchParams): number | null {
  const raw = q.get('since');
  if (raw === null) return null;
  const n = Number(raw);
  if (!/^\d{1,16}$/.test(raw) || !Number.isSafeInteger(n)) throw new ApiError(400, `since must be a log offset: a non-negative integer (got ${JSON.stringify(raw.slice(0, 40))})`);
  return n;
}

async function serveView(session: Session, ws: WebSocket, since: number | null): Promise<void> {
  const send = (f: ViewerServerFrame): void => sendJson(ws, f);
  // Counts what is in flight to this viewer (sent, not yet acked) and how fast it acks.
  const pace = new ViewerPace(ViewerConstants.ResyncBytes, ViewerConstants.ResyncAfterMs);
  let cursor: LogCursor | null = null;
  let detach: (() => void) | null = null;
  let size = { cols: session.cols, rows: session.rows };
  const viewer = person('viewer');
  // The floor governs the viewer's keyboard: in watch mode it sends nothing (the person's own REST
  // calls are never refused; this is about keys typed into a tab that is only being watched).
  const keyboardAllowed = (): void => {
    if (session.floor.mode === 'watch') throw new ApiError(409, 'This session is in watch mode: switch to type or take over to send keys');
  };

  // Input first: keys typed while the snapshot is on its way must not be lost.
  ws.on('message', (data, isBinary) => {
    if (isBinary) return send({ type: 'error', message: 'send input as {"type":"input","data":"..."}' });
    const frame = jsonObject(asText(data));
    try {
      if (!frame) throw new ApiError(400, 'viewer frames are JSON objects: input, resize or ack');
      switch (frame.type) {
        case 'input':
          if (typeof frame.data !== 'string') throw new ApiError(400, 'input needs a string "data"');
          keyboardAllowed();
          session.write(frame.data, viewer);
          return;
        case 'resize': {
          const { cols, rows } = frame;
          if (!isDim(cols, SessionConstants.MaxCols) || !isDim(rows, SessionConstants.MaxRows)) throw new ApiError(400, 'resize needs integer cols and rows');
          // Only someone who may type sets the size (see docs/API.md: whose size the PTY takes).
          keyboardAllowed();
          session.resize(cols, rows, viewer);
          return;
        }
        case 'ack':
          if (typeof frame.bytes !== 'number' || !(frame.bytes >= 0)) throw new ApiError(400, 'ack needs a non-negative number of bytes');
          pace.acked(frame.bytes);
          // Resume a viewer held at its window only once half of the window is free: resuming on every
          // small ack would send the backlog in as many small frames as acks (and new output waits for
          // the hub's next batch anyway).
          if (cursor?.isBlocked && pace.inFlightBytes <= ViewerFlowControl.HighWatermarkBytes / 2) cursor.pump();
          return;
        default:
          throw new ApiError(400, `unknown frame type ${JSON.stringify(frame.type)}`);
      }
    } catch (err) {
      send({ type: 'error', message: (err as Error).message });
    }
  });

  let shownAsPipes = false;
  let resyncing = false;
  const resync = (reason: string): void => {
    if (resyncing) return;
    resyncing = true;
    send({ type: 'resync', reason });
    void start(null);
  };
  const start = async (resumeAt: number | null): Promise<void> => {
    detach?.();
    resyncing = false;
    const pipes = session.mode === 'pipe';
    let from: number;
    if (resumeAt !== null && resumeAt >= session.log.start && resumeAt <= session.log.end) {
      // A viewer that comes back (or a deck relaying a remote's view after the remote restarted) goes on
      // from the byte it has shown up to: nothing lost, nothing doubled, no repaint.
      from = resumeAt;
      size = { cols: session.cols, rows: session.rows };
      send({ type: 'resume', offset: from, cols: size.cols, rows: size.rows, ...(pipes ? { channels: true } : {}) });
    } else if (pipes) {
      // Pipes have no screen to paint: the recent output is the picture, replayed with its channels.
      from = Math.max(session.log.start, session.log.end - ViewerConstants.PipeReplayBytes);
      size = { cols: session.cols, rows: session.rows };
      send({ type: 'snapshot', data: '', cols: size.cols, rows: size.rows, offset: from, channels: true });
    } else {
      const snap = await session.screen.snapshot();
      // Started on pipes meanwhile: the resync that change caused paints it instead.
      if (!isOpen(ws) || session.mode === 'pipe') return;
      size = { cols: snap.cols, rows: snap.rows };
      from = snap.offset;
      send({ type: 'snapshot', data: snap.data, cols: snap.cols, rows: snap.rows, offset: snap.offset });
    }
    shownAsPipes = pipes;
    pace.reset();
    const attached = attachCursor(session, ws, {
      from,
      // The viewer styles each channel of a pipe session apart, so a frame must not end inside a character.
      wholeCharacters: pipes,
      mayTakeMore: () => pace.inFlightBytes < ViewerFlowControl.HighWatermarkBytes,
      send: (payload, channel, at, flushed) => {
        if (pace.shouldResync(session.log.end - at)) {
          flushed();
          resync(`this viewer fell ${Math.round((session.log.end - at) / 1024)} KiB behind`);
          return;
        }
        // A pipe session's frame: its channel byte, then the bytes.
        const out = pipes ? headedFrame(Uint8Array.of(channel), payload) : ownFrame(payload);
        pace.sent(out.frame.length, session.log.end - at - payload.length);
        sendFrame(ws, out, flushed);
      },
      onGap: () => {
        resync('the output this viewer had not shown yet was dropped from the log');
        return false;
      },
    }, { viewer: true });
    cursor = attached.cursor;
    detach = attached.detach;
    cursor.pump();
  };

  const offChanged = session.events.on('changed', () => {
    // A session execd started lazily may have started on pipes since this view painted it.
    if (session.mode === 'pipe' && !shownAsPipes) return resync('the session started on pipes');
    if (session.cols !== size.cols || session.rows !== size.rows) {
      size = { cols: session.cols, rows: session.rows };
      send({ type: 'size', cols: size.cols, rows: size.rows });
    }
  });
  const offExit = session.events.on('exit', (e) => {
    cursor?.pump();
    send({ type: 'exit', exitCode: e.exitCode });
  });
  const offClosed = session.events.on('closed', () => ws.close(1000, 'session closed'));
  ws.once('close', () => {
    offChanged();
    offExit();
    offClosed();
    detach?.();
  });
  await start(since);
  if (session.exit) send({ type: 'exit', exitCode: session.exit.exitCode });
}

const isDim = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max;

