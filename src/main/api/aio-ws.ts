import type { WebSocket } from 'ws';
import { SessionConstants } from '../terminal/constants';
import type { LogCursor } from '../terminal/output-hub';
import type { Session } from '../terminal/session';
import { incompleteTailLength, leadingContinuationLength } from '../terminal/utf8';
import { actorOf } from './auth';
import { ApiError } from './errors';
import { sendFrame } from './frame-blocks';
import { outputJsonFrame } from './json-frame';
import type { ApiContext, Door, UpgradeRequest, WsRoute } from './server';
import { asBuffer, asText, attachCursor, isOpen, jsonObject, keepalive, sendJson, sendRaw } from './ws-util';

/**
 * AIO Sandbox's terminal WebSocket (seed 003), on `/v2/pty/sessions/{id}/ws`, `/v2/pty/ws` (anonymous)
 * and `/v1/shell/ws[?session_id=]`.
 *
 *   server -> client   {"type":"ready","session_id","transport","backend","resumed"}
 *                      {"type":"restore_output","data"} then {"type":"terminal_restored","session_id"}   (restore)
 *                      {"type":"output","data"}  (json) | binary frames of raw PTY bytes (protocol=binary)
 *                      {"type":"pong","timestamp"} · {"type":"error","data"} · {"type":"relay_replaced"}
 *                      {"type":"session_id","data"} before ready, when /v1/shell/ws made the session
 *                      {"type":"exit","exit_code"} then close 1000, when the shell ends
 *   client -> server   {"type":"input","data"} · {"type":"resize","cols","rows"} (or under "data") ·
 *                      {"type":"ping","timestamp"} · binary frames = raw input · anything else is typed
 *
 * One socket per terminal: a second one is refused, unless it is `durable`, in which case it takes over
 * and the older socket gets `relay_replaced` and is closed.
 */
export const ReplayBytes = { Default: 10 * 1024 * 1024, Min: 256 * 1024, Max: 10 * 1024 * 1024 } as const;

interface Relay {
  socket: WebSocket | null;
  /** The last attach asked to keep the terminal's output while nothing is attached. */
  durable: boolean;
  /**
   * Where the next restore starts. The first reconnect replays from the session's first byte (seed 003's
   * example replays what the first socket had already seen); a socket that came in through a restore
   * moves the mark as it delivers, so a later reconnect replays only the gap it missed.
   */
  restoreMark: number;
}

const relays = new WeakMap<Session, Relay>();

interface AttachQuery {
  transport: 'json' | 'binary';
  durable: boolean;
  restore: boolean;
  replayBytes: number;
}

const flag = (v: string | null): boolean => v === 'true' || v === '1' || v === 'yes';

function parseQuery(q: URLSearchParams): AttachQuery {
  const protocol = (q.get('protocol') ?? 'json').toLowerCase();
  if (protocol !== 'json' && protocol !== 'binary') throw new ApiError(400, `protocol must be json or binary (got ${JSON.stringify(q.get('protocol'))})`);
  let replayBytes: number = ReplayBytes.Default;
  const raw = q.get('replay_bytes');
  if (raw !== null) {
    const n = Number(raw);
    if (!Number.isFinite(n)) throw new ApiError(400, `replay_bytes must be a number of bytes (got ${JSON.stringify(raw)})`);
    replayBytes = Math.min(ReplayBytes.Max, Math.max(ReplayBytes.Min, Math.trunc(n)));
  }
  return { transport: protocol, durable: flag(q.get('durable')), restore: flag(q.get('restore')), replayBytes };
}

export const ERR_ALREADY_ATTACHED = 'Session already has an active WebSocket connection';

/**
 * 1.x's `/v1/shell/ws` sent `{"type":"ping","timestamp":ms}` every 30 s, and clients written for it may
 * count on that traffic (to keep a proxy's idle timer from closing the socket, or to see that the
 * server is alive). Not `as const`: a test shortens it instead of waiting 30 s.
 */
export const V1ShellWsTiming = { AppPingMs: 30_000 };

function appPing(ws: WebSocket): void {
  const timer = setInterval(() => sendJson(ws, { type: 'ping', timestamp: Date.now() }), V1ShellWsTiming.AppPingMs);
  timer.unref();
  ws.once('close', () => clearInterval(timer));
}

function refuseFlagsWithoutSession(q: AttachQuery): void {
  if (q.durable || q.restore) throw new ApiError(400, 'durable and restore need an explicit session: attach to /v2/pty/sessions/{id}/ws or pass session_id');
}

export const aioWsDoor: Door = {
  register() {
    // WebSocket only.
  },
  wsRoutes(ctx: ApiContext): WsRoute[] {
    return [
      {
        path: '/v2/pty/sessions/:id/ws',
        handle: async (up) => {
          const q = parseQuery(up.query);
          const session = ctx.sessionFor(up.principal, up.params.id, 'aio');
          await serveTerminal(up, session, q, { announceId: false });
        },
      },
      {
        path: '/v2/pty/ws',
        handle: async (up) => {
          const q = parseQuery(up.query);
          refuseFlagsWithoutSession(q);
          // An anonymous shell lives and dies with its socket (and never outlives a failed handshake).
          const { session } = await ctx.createSession(up.principal, { origin: 'aio-ws', retention: 'expiring' });
          const ws = await serveTerminal(up, session, q, { announceId: false }).catch(() => null);
          if (ws) ws.once('close', () => void ctx.manager.close(session.id));
          else await ctx.manager.close(session.id);
        },
      },
      {
        path: '/v1/shell/ws',
        handle: async (up) => {
          const q = parseQuery(up.query);
          const id = up.query.get('session_id');
          if (id) {
            const s = ctx.manager.get(id);
            if (!s || !ctx.canSee(up.principal, s)) {
              // 1.x answers an unknown id inside the socket.
              const ws = await up.accept();
              sendJson(ws, { type: 'error', data: 'Session not found' }, () => ws.close(4404, 'Session not found'));
              return;
            }
            const ws = await serveTerminal(up, s, q, { announceId: false });
            if (ws) appPing(ws);
            return;
          }
          refuseFlagsWithoutSession(q);
          const { session } = await ctx.createSession(up.principal, { origin: 'aio-v1' });
          // The session it announces outlives the socket, but not a handshake that never completed.
          const ws = await serveTerminal(up, session, q, { announceId: true }).catch(() => 'failed' as const);
          if (ws === 'failed') await ctx.manager.close(session.id);
          else if (ws) appPing(ws);
        },
      },
    ];
  },
};

async function serveTerminal(up: UpgradeRequest, session: Session, q: AttachQuery, opts: { announceId: boolean }): Promise<WebSocket | null> {
  const ws = await up.accept();
  keepalive(ws);
  session.touch();

  // 1. One socket per terminal: refuse a second plain one; a durable one takes over.
  const relay = relays.get(session) ?? { socket: null, durable: false, restoreMark: session.log.start };
  relays.set(session, relay);
  let resumed = relay.durable;
  if (relay.socket && isOpen(relay.socket)) {
    if (!q.durable) {
      sendJson(ws, { type: 'error', data: ERR_ALREADY_ATTACHED }, () => ws.close(4409, ERR_ALREADY_ATTACHED));
      return null;
    }
    const old = relay.socket;
    sendJson(old, { type: 'relay_replaced', session_id: session.id }, () => old.close(4000, 'relay replaced'));
    resumed = true;
  }
  relay.socket = ws;
  relay.durable = q.durable;
  ws.once('close', () => {
    if (relay.socket === ws) relay.socket = null;
  });

  if (!session.started) session.start();
  const by = actorOf(up.principal, 'aio-ws');
  // 2. Input and control frames, from the first moment: a client may type before its paint arrives.
  ws.on('message', (data, isBinary) => {
    try {
      if (isBinary) {
        session.write(asBuffer(data), by);
        return;
      }
      const text = asText(data);
      const frame = jsonObject(text);
      if (!frame || typeof frame.type !== 'string') {
        session.write(text, by);
        return;
      }
      switch (frame.type) {
        case 'input':
          if (typeof frame.data !== 'string') throw new ApiError(400, 'input frames carry their text as a string in "data"');
          session.write(frame.data, by);
          return;
        case 'resize': {
          const inner = frame.data && typeof frame.data === 'object' ? (frame.data as Record<string, unknown>) : {};
          const cols = frame.cols ?? inner.cols;
          const rows = frame.rows ?? inner.rows;
          if (!isDim(cols, SessionConstants.MaxCols) || !isDim(rows, SessionConstants.MaxRows)) {
            throw new ApiError(400, `resize needs integer cols (1-${SessionConstants.MaxCols}) and rows (1-${SessionConstants.MaxRows}), at the top level or under "data"`);
          }
          session.resize(cols, rows, by);
          return;
        }
        case 'ping':
          sendJson(ws, { type: 'pong', timestamp: frame.timestamp ?? Date.now() });
          return;
        case 'pong':
          return;
        default:
          session.write(text, by);
      }
    } catch (err) {
      sendJson(ws, { type: 'error', data: (err as Error).message });
    }
  });

  if (opts.announceId) sendJson(ws, { type: 'session_id', data: session.id });
  sendJson(ws, { type: 'ready', session_id: session.id, transport: q.transport, backend: session.backendKind, resumed });

  const json = q.transport === 'json';
  const sendBytes = (payload: Buffer, flushed: () => void): void => (json ? sendFrame(ws, outputJsonFrame(payload), flushed, true) : sendRaw(ws, payload, flushed));

  let from: number;
  const restoring = q.durable && q.restore && resumed;
  if (restoring) {
    // 3. Restore (only when resuming a durable relay: that is what kept the output). Everything from the
    //    last restore point on is replayed: the first reconnect replays from the session's start, a later
    //    one only the gap since the previous reconnect (seed 003's example shows exactly this).
    //    INVARIANT: the replay ends, and the live cursor begins, at the same offset, read in this one
    //    synchronous step; no PTY output can land between them, so no byte is missed or doubled.
    const end = session.log.end;
    let start = Math.max(relay.restoreMark, end - q.replayBytes, session.log.start);
    let bytes = session.log.read(start, end);
    start = end - bytes.length; // later than asked if bytes were lost while being read
    if (json) {
      const skip = leadingContinuationLength(bytes);
      start += skip;
      bytes = bytes.subarray(skip, bytes.length - incompleteTailLength(bytes.subarray(skip)));
    }
    from = start + bytes.length;
    relay.restoreMark = from;
    if (bytes.length) {
      if (json) sendJson(ws, { type: 'restore_output', data: bytes.toString('utf8') });
      else sendRaw(ws, bytes, () => undefined);
    }
    sendJson(ws, { type: 'terminal_restored', session_id: session.id });
  } else {
    // 3. Paint the screen as it is now; live output continues exactly from the snapshot's offset.
    const snap = await session.screen.snapshot(0);
    if (!isOpen(ws)) return null;
    from = snap.offset;
    sendBytes(Buffer.from('\x1b[H\x1b[2J' + snap.data, 'utf8'), () => undefined);
  }

  // 4. Live output.
  let cursor: LogCursor | null = null;
  const attached = attachCursor(session, ws, {
    from,
    wholeCharacters: json,
    holdsBackTerminal: true,
    send: (payload, _channel, at, flushed) => {
      // A restored socket moves the mark as it delivers: the next reconnect gets only what it missed.
      if (restoring) relay.restoreMark = Math.max(relay.restoreMark, at + payload.length);
      sendBytes(payload, flushed);
    },
    onGap: (lost, resumeAt) => {
      sendJson(ws, { type: 'error', data: `This client fell behind: ${resumeAt - lost} bytes of output were dropped before it read them; continuing from the oldest byte kept` });
      return true;
    },
  });
  cursor = attached.cursor;
  cursor.pump();

  // 5. The shell ended, or the session was closed: deliver what is left, then say so.
  let ending = false;
  const end = (withExit: boolean): void => {
    if (ending) return;
    ending = true;
    drainThen(session, cursor!, ws, () =>
      withExit ? sendJson(ws, { type: 'exit', exit_code: session.exit?.exitCode ?? null }, () => ws.close(1000, 'process exited')) : ws.close(1000, 'session closed'),
    );
  };
  const offExit = session.events.on('exit', () => end(true));
  const offClosed = session.events.on('closed', () => end(false));
  ws.once('close', () => {
    offExit();
    offClosed();
  });
  if (session.exit) end(true);
  return ws;
}

const isDim = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max;

/** Runs `then` once the cursor has sent everything the log holds (or the socket is gone). */
export function drainThen(session: Session, cursor: LogCursor, ws: WebSocket, then: () => void): void {
  const deadline = Date.now() + 5000;
  const check = (): void => {
    if (!isOpen(ws)) return;
    cursor.pump();
    // Up to 3 bytes may remain: the start of a UTF-8 character that a JSON frame cannot carry alone.
    if ((session.log.end - cursor.offset <= 3 && cursor.unflushed === 0) || Date.now() > deadline) then();
    else setTimeout(check, 10);
  };
  check();
}
