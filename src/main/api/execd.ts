import { z } from 'zod';
import type { WebSocket } from 'ws';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SessionConstants } from '../terminal/constants';
import { InvalidRequestError } from '../terminal/errors';
import { creatableDirectory } from '../terminal/paths';
import { childEnvironment } from '../terminal/shell-integration';
import type { LogCursor } from '../terminal/output-hub';
import type { Session } from '../terminal/session';
import { drainThen } from './aio-ws';
import { actorOf, type Principal } from './auth';
import { ApiError } from './errors';
import { headedFrame, sendFrame, type PooledFrame } from './frame-blocks';
import type { ApiContext, Door, WsRoute } from './server';
import { bodyObject, parse } from './validate';
import { asBuffer, asText, attachCursor, isOpen, jsonObject, keepalive, sendJson } from './ws-util';

/**
 * OpenSandbox execd's PTY door (seed 004, docs/../opensandbox-execd-pty.md), framing byte for byte:
 *
 *   POST   /pty {cwd?, command?}   201 {session_id}; the shell starts on the first WebSocket
 *   GET    /pty/{id}               {session_id, running, output_offset}
 *   DELETE /pty/{id}               200, empty body; then 404 CONTEXT_NOT_FOUND
 *   GET    /pty/{id}/ws?pty=0&since=N&takeover=1
 *
 *   server -> client  binary [0x03][8-byte big-endian offset][bytes]  replay (one frame), then
 *                     text   {"type":"connected","session_id","mode":"pty"|"pipe"}
 *                     binary [0x01][bytes] stdout · [0x02][bytes] stderr (pipe mode)
 *                     text   {"type":"pong"} · {"type":"exit","exit_code"} then close 1000 ·
 *                            {"type":"error","error","code"}
 *   client -> server  binary [0x00][bytes] stdin · text {"type":"resize","cols","rows"} ·
 *                     {"type":"signal","signal"} · {"type":"ping"} · {"type":"stdin","data"}
 *
 * One socket per session: a second gets 409 ALREADY_CONNECTED before the upgrade, unless it passes
 * takeover=1, which closes the holder with 4001 TAKEN_OVER.
 */
const CH_STDIN = 0x00;
const CH_STDOUT = 0x01;
const CH_STDERR = 0x02;
const CH_REPLAY = 0x03;
const SIGNALS = new Set(['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGQUIT', 'SIGHUP']);

const CreateBody = z.object({
  cwd: z.string().max(4096).nullable().optional(),
  command: z.string().max(1024 * 1024).nullable().optional(),
});

const holders = new WeakMap<Session, WebSocket>();

/**
 * execd expands $VAR, ${VAR} and a leading ~ in cwd, then creates the directory. ptydeck expands against
 * the environment the session's shell starts with (what `cd "$VAR"` would see in it), never against the
 * server's own: the server's credentials are not in that environment, so no error can carry them.
 * The errors quote the request as sent, never an expansion.
 */
async function execdWorkDir(raw: string | null | undefined): Promise<string | undefined> {
  if (!raw) return undefined;
  if (raw.includes('\0')) throw new ApiError(400, 'cwd must not contain NUL bytes', 'INVALID_REQUEST_BODY');
  const env = childEnvironment(process.env);
  const dir = raw.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, a: string, b: string) => {
    const name = a ?? b;
    const v = env[name];
    if (v === undefined) throw new ApiError(400, `cwd: error resolving PTY session work directory: variable ${name} is not defined in the session's environment`, 'INVALID_REQUEST_BODY');
    return v;
  });
  try {
    return await creatableDirectory(dir, 'cwd');
  } catch (err) {
    if (err instanceof InvalidRequestError) throw new ApiError(400, err.message.replace(JSON.stringify(dir), JSON.stringify(raw)), 'INVALID_REQUEST_BODY');
    throw err;
  }
}

const frame = (channel: number, payload: Buffer): PooledFrame => headedFrame(Uint8Array.of(channel), payload);

const replayFrame = (offset: number, payload: Buffer): PooledFrame => {
  const head = Buffer.allocUnsafe(9);
  head[0] = CH_REPLAY;
  head.writeBigUInt64BE(BigInt(offset), 1);
  return headedFrame(head, payload);
};

export const execdDoor: Door = {
  register(app: FastifyInstance, ctx: ApiContext) {
    const session = (req: FastifyRequest): Session => {
      const s = ctx.sessionFor(req.principal, (req.params as { id: string }).id, 'execd');
      s.touch();
      return s;
    };

    app.post('/pty', async (req, reply) => {
      const body = parse(CreateBody, bodyObject(req.body, 'execd'), 'execd');
      const cwd = await execdWorkDir(body.cwd);
      const { session: s } = await ctx.createSession(req.principal, {
        origin: 'execd',
        explicit: true,
        cwd,
        command: body.command ?? undefined,
        lazy: true,
      });
      return reply.code(201).send({ session_id: s.id });
    });

    app.get('/pty/:id', async (req) => {
      const s = session(req);
      return { session_id: s.id, running: s.isAlive, output_offset: s.log.end, controller: s.floor.controller };
    });

    // A plain GET on the socket path: execd answers 409 while the session is held (and evicts no one,
    // whatever `takeover` says), else the upgrade is missing.
    app.get('/pty/:id/ws', async (req) => {
      const s = session(req);
      const holder = holders.get(s);
      if (holder && isOpen(holder)) throw new ApiError(409, `another client is already connected to pty session ${s.id}`, 'ALREADY_CONNECTED');
      throw new ApiError(400, 'this route needs a WebSocket upgrade', 'INVALID_REQUEST');
    });

    app.delete('/pty/:id', async (req, reply) => {
      const s = session(req);
      await ctx.manager.close(s.id, actorOf(req.principal, 'execd'));
      return reply.code(200).send();
    });
  },

  wsRoutes(ctx: ApiContext): WsRoute[] {
    return [
      {
        path: '/pty/:id/ws',
        execd: true,
        handle: async (up) => {
          // 1. Look up before upgrading: an unknown id is a plain 404.
          const session = ctx.sessionFor(up.principal, up.params.id, 'execd');
          const takeover = up.query.get('takeover') === '1' || up.query.get('takeover') === 'true';
          const holder = holders.get(session);
          // 2. One socket per session: 409 before the upgrade unless this is a takeover.
          if (holder && isOpen(holder) && !takeover) {
            throw new ApiError(409, `another client is already connected to pty session ${session.id}`, 'ALREADY_CONNECTED');
          }
          const ws = await up.accept();
          keepalive(ws);
          session.touch();
          // 3. Evict the holder, if any.
          const current = holders.get(session);
          if (current && current !== ws && isOpen(current)) current.close(4001, 'TAKEN_OVER');
          holders.set(session, ws);
          ws.once('close', () => {
            if (holders.get(session) === ws) holders.delete(session);
          });
          // 4. Start the shell if this is its first socket; the first one picks the mode.
          if (!session.started) {
            try {
              session.start(up.query.get('pty') === '0' ? 'pipe' : 'pty');
            } catch (err) {
              sendJson(ws, { type: 'error', error: `could not start the shell: ${(err as Error).message}`, code: 'START_FAILED' }, () => ws.terminate());
              return;
            }
          }
          serveExecd(session, ws, parseSince(up.query.get('since')), up.principal);
        },
      },
    ];
  },
};

function parseSince(raw: string | null): number {
  // execd reads it with %d: absent or not a number means 0, i.e. replay everything kept.
  if (raw === null) return 0;
  const n = Number.parseInt(raw, 10);
  return Number.isFinite(n) ? n : 0;
}

function serveExecd(session: Session, ws: WebSocket, since: number, principal: Principal): void {
  const by = actorOf(principal, 'execd');
  const log = session.log;
  // 5. Replay and attach. INVARIANT: the snapshot ends, and the live cursor begins, at the same offset,
  //    read in this one synchronous step; no PTY output can land between them, so no byte is missed
  //    or doubled. `since` before the oldest byte kept is clamped to it; the frame's offset says so.
  const end = log.end;
  const from = Math.min(Math.max(since, log.start), end);
  if (from < end) {
    // The frame says where its bytes begin: later than `from` if some were lost while being read.
    const bytes = log.read(from, end);
    sendFrame(ws, replayFrame(end - bytes.length, bytes), () => undefined);
  }
  sendJson(ws, { type: 'connected', session_id: session.id, mode: session.mode ?? 'pty' });

  // 6. Live output. After a gap (this client read too slowly), the next frame is a replay frame whose
  //    offset tells the client where it resumes.
  let resumeWithReplay = false;
  let cursor: LogCursor | null = null;
  cursor = attachCursor(session, ws, {
    from: end,
    wholeCharacters: false,
    holdsBackTerminal: true,
    send: (payload, channel, at, flushed) => {
      if (resumeWithReplay) {
        resumeWithReplay = false;
        sendFrame(ws, replayFrame(at, payload), flushed);
      } else sendFrame(ws, frame(channel === 2 ? CH_STDERR : CH_STDOUT, payload), flushed);
    },
    onGap: () => {
      resumeWithReplay = true;
      return true;
    },
  }).cursor;
  cursor.pump();

  const error = (message: string, code: string): void => sendJson(ws, { type: 'error', error: message, code });

  // 7. Client frames.
  ws.on('message', (data, isBinary) => {
    try {
      if (isBinary) {
        const buf = asBuffer(data);
        // execd ignores an empty frame or an unknown channel byte.
        if (buf.length < 2 || buf[0] !== CH_STDIN) return;
        session.write(buf.subarray(1), by);
        return;
      }
      const msg = jsonObject(asText(data));
      if (!msg) return error('text frames must be JSON objects: {"type":"resize"|"signal"|"ping"|"stdin", ...}', 'INVALID_FRAME');
      switch (msg.type) {
        case 'resize': {
          const { cols, rows } = msg;
          if (!isPositiveInt(cols) || !isPositiveInt(rows)) return error('resize needs positive integer cols and rows', 'INVALID_FRAME');
          session.resize(Math.min(cols, SessionConstants.MaxCols), Math.min(rows, SessionConstants.MaxRows), by);
          return;
        }
        case 'signal': {
          const sig = typeof msg.signal === 'string' ? msg.signal.toUpperCase() : '';
          if (!SIGNALS.has(sig)) return error(`signal must be one of ${[...SIGNALS].join(', ')}`, 'INVALID_FRAME');
          // To the terminal's foreground group: what a person's Ctrl-C would reach.
          session.signalForeground(sig as NodeJS.Signals, by, { allowShellKill: true });
          return;
        }
        case 'ping':
          return sendJson(ws, { type: 'pong' });
        case 'stdin':
          if (typeof msg.data !== 'string') return error('stdin frames carry text in "data"', 'INVALID_FRAME');
          session.write(msg.data, by);
          return;
        default:
          return error(`unknown frame type ${JSON.stringify(msg.type)}`, 'INVALID_FRAME');
      }
    } catch (err) {
      const e = err as Error;
      error(e.message, e.name === 'FloorRefusedError' ? 'FLOOR_HELD' : 'STDIN_WRITE_FAILED');
    }
  });

  // 8. The shell exits (or the session is deleted): deliver what is left, send exit, close 1000.
  let exitSent = false;
  const sendExit = (): void => {
    if (exitSent) return;
    exitSent = true;
    drainThen(session, cursor!, ws, () => sendJson(ws, { type: 'exit', exit_code: session.exit?.exitCode ?? -1 }, () => ws.close(1000, 'process exited')));
  };
  const offExit = session.events.on('exit', sendExit);
  const offClosed = session.events.on('closed', sendExit);
  ws.once('close', () => {
    offExit();
    offClosed();
  });
  if (session.exit) sendExit();
}

const isPositiveInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;
