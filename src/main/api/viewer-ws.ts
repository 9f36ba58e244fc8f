import type { WebSocket } from 'ws';
import { ViewerFlowControl, type ViewerEvent, type ViewerServerFrame } from '../../shared/types';
import { SessionConstants } from '../terminal/constants';
import type { LogCursor } from '../terminal/output-hub';
import type { Session } from '../terminal/session';
import { person } from '../terminal/actor';
import { ApiError } from './errors';
import type { ApiContext, Door, WsRoute } from './server';
import { asText, attachCursor, isOpen, jsonObject, keepalive, sendJson, sendRaw } from './ws-util';

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
 * back the shell, the agent or other viewers; when it falls further behind than ResyncBytes (or behind
 * what the log still holds) it gets a `resync` and a fresh snapshot instead of the backlog.
 */
export const ViewerConstants = {
  /** Behind by more than this, a viewer is resynced from a snapshot rather than fed the backlog. */
  ResyncBytes: 2 * 1024 * 1024,
  /** Coalesce a session's change notifications on the events socket. */
  EventCoalesceMs: 50,
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
          const session = ctx.sessionFor(up.principal, up.params.id, 'native');
          const ws = await up.accept();
          keepalive(ws);
          ws.once('close', ctx.presence.enter());
          await serveView(session, ws);
        },
      },
    ];
  },
};

function serveEvents(ctx: ApiContext, ws: WebSocket, principal: Parameters<ApiContext['canSee']>[0]): void {
  const send = (e: ViewerEvent): void => sendJson(ws, e);
  send({ type: 'hello', principal: principal.name, sessions: ctx.visibleSessions(principal).map((s) => s.summary()) });
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
    if (timer) clearTimeout(timer);
  });
}

async function serveView(session: Session, ws: WebSocket): Promise<void> {
  const send = (f: ViewerServerFrame): void => sendJson(ws, f);
  let acked = 0;
  let sent = 0;
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
          acked = Math.min(sent, acked + frame.bytes);
          // Resume a viewer held at its window only once half of the window is free: resuming on every
          // small ack would send the backlog in as many small frames as acks (and new output waits for
          // the hub's next batch anyway).
          if (cursor?.isBlocked && sent - acked <= ViewerFlowControl.HighWatermarkBytes / 2) cursor.pump();
          return;
        default:
          throw new ApiError(400, `unknown frame type ${JSON.stringify(frame.type)}`);
      }
    } catch (err) {
      send({ type: 'error', message: (err as Error).message });
    }
  });

  const start = async (): Promise<void> => {
    detach?.();
    const snap = await session.screen.snapshot();
    if (!isOpen(ws)) return;
    size = { cols: snap.cols, rows: snap.rows };
    send({ type: 'snapshot', data: snap.data, cols: snap.cols, rows: snap.rows, offset: snap.offset });
    acked = sent = 0;
    let resyncing = false;
    const resync = (reason: string): void => {
      if (resyncing) return;
      resyncing = true;
      send({ type: 'resync', reason });
      void start();
    };
    const attached = attachCursor(session, ws, {
      from: snap.offset,
      wholeCharacters: false,
      mayTakeMore: () => sent - acked < ViewerFlowControl.HighWatermarkBytes,
      send: (payload, _channel, at, flushed) => {
        if (session.log.end - at > ViewerConstants.ResyncBytes) {
          flushed();
          resync(`this viewer fell ${Math.round((session.log.end - at) / 1024)} KiB behind`);
          return;
        }
        sent += payload.length;
        sendRaw(ws, payload, flushed);
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
  await start();
  if (session.exit) send({ type: 'exit', exitCode: session.exit.exitCode });
}

const isDim = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max;

