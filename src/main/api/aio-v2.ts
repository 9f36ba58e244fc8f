import { userInfo } from 'node:os';
import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SessionConstants } from '../terminal/constants';
import { checkInputSize, checkedDir, commandResult, envelope, failure, screenOf, sessionInfo, statsOf, waitFor } from './aio-common';
import { actorOf } from './auth';
import { ApiError } from './errors';
import type { ApiContext, Door } from './server';
import { bodyObject, dimension, envMap, optSeconds, parse, path, sessionId, title } from './validate';

/**
 * AIO Sandbox v2 terminals (`/v2/pty/*`), as seed 003 and aiod's route list give them.
 * The WebSocket routes of this dialect live in aio-ws.ts.
 */
const CreateBody = z.object({
  id: sessionId.nullable().optional(),
  cwd: path.nullable().optional(),
  cols: dimension(SessionConstants.MaxCols).nullable().optional(),
  rows: dimension(SessionConstants.MaxRows).nullable().optional(),
  env: envMap.nullable().optional(),
  user: z.string().max(256).nullable().optional(),
  retention: z.enum(['persistent', 'expiring']).nullable().optional(),
  no_change_timeout: z.number().int().min(0).max(7 * 24 * 3600).nullable().optional(),
  // ptydeck's extension: what the viewer calls this terminal.
  title: title.nullable().optional(),
});

const PatchBody = z.object({
  cols: dimension(SessionConstants.MaxCols).nullable().optional(),
  rows: dimension(SessionConstants.MaxRows).nullable().optional(),
  no_change_timeout: z.number().int().min(0).max(7 * 24 * 3600).nullable().optional(),
});

const ExecBody = z.object({
  command: z.string().refine((c) => c.trim().length > 0, 'must not be empty'),
  async: z.boolean().nullable().optional(),
  timeout: optSeconds,
  hard_timeout: optSeconds,
  no_change_timeout: optSeconds,
});

const InputBody = z.object({
  input: z.string(),
  press_enter: z.boolean().nullable().optional(),
});

const WaitBody = z.object({ seconds: optSeconds });
const SignalBody = z.object({ signal: z.string().max(16).nullable().optional() });

const idParam = (req: FastifyRequest): string => (req.params as { id: string }).id;

export const aioV2Door: Door = {
  register(app: FastifyInstance, ctx: ApiContext) {
    const session = (req: FastifyRequest) => {
      const s = ctx.sessionFor(req.principal, idParam(req), 'aio');
      s.touch();
      return s;
    };

    app.post('/v2/pty/sessions', async (req) => {
      const body = parse(CreateBody, bodyObject(req.body, 'aio'), 'aio');
      if (body.user && body.user !== userInfo().username) {
        throw new ApiError(400, `user ${JSON.stringify(body.user)}: terminals run as ${userInfo().username}; running as another user is not supported`);
      }
      const cwd = body.cwd ? await checkedDir(body.cwd) : undefined;
      const { session: s, created } = await ctx.createSession(req.principal, {
        id: body.id ?? undefined,
        origin: 'aio-v2',
        explicit: true,
        cwd,
        cols: body.cols,
        rows: body.rows,
        env: body.env,
        retention: body.retention ?? undefined,
        noChangeTimeoutSecs: body.no_change_timeout,
        title: body.title,
      });
      return envelope({ ...sessionInfo(s), created }, created ? 'Session created' : 'Session already exists');
    });

    app.get('/v2/pty/sessions', async (req) => {
      const sessions = Object.fromEntries(ctx.visibleSessions(req.principal).map((s) => [s.id, sessionInfo(s)]));
      return envelope({ sessions, stats: statsOf(ctx, req) });
    });

    app.get('/v2/pty/sessions/:id', async (req) => envelope(sessionInfo(session(req))));

    app.patch('/v2/pty/sessions/:id', async (req) => {
      const s = session(req);
      const body = parse(PatchBody, bodyObject(req.body, 'aio'), 'aio');
      if (body.cols != null || body.rows != null) s.resize(body.cols ?? s.cols, body.rows ?? s.rows, actorOf(req.principal, 'aio-v2'));
      if (body.no_change_timeout != null) s.noChangeTimeoutSecs = body.no_change_timeout;
      return envelope(sessionInfo(s), 'Session updated');
    });

    app.delete('/v2/pty/sessions/:id', async (req) => {
      const id = idParam(req);
      const s = ctx.manager.get(id);
      if (!s || !ctx.canSee(req.principal, s)) return failure(`Session ${id} not found`);
      const report = await ctx.manager.close(id, actorOf(req.principal, 'aio-v2'));
      return envelope({ session_id: id, survivors: report?.survivors ?? [], tracked_by: report?.trackedBy ?? null }, 'Session closed');
    });

    app.post('/v2/pty/sessions/:id/exec', async (req) => {
      const s = session(req);
      const body = parse(ExecBody, bodyObject(req.body, 'aio'), 'aio');
      const noChange = body.no_change_timeout ?? s.noChangeTimeoutSecs;
      const { record, outcome } = await s.exec(body.command, {
        async: body.async === true,
        timeoutSecs: body.timeout,
        hardTimeoutSecs: body.hard_timeout,
        noChangeTimeoutSecs: noChange,
        writer: actorOf(req.principal, 'aio-v2'),
      });
      // v2 always truncates (seed 003).
      return commandResult(s, record, outcome, { truncate: true, timeout: body.timeout, hard: body.hard_timeout, noChange });
    });

    app.get('/v2/pty/sessions/:id/screen', async (req) => envelope(screenOf(session(req))));

    app.post('/v2/pty/sessions/:id/input', async (req) => {
      const s = session(req);
      const body = parse(InputBody, bodyObject(req.body, 'aio'), 'aio');
      checkInputSize(ctx, body.input);
      s.write(body.input + (body.press_enter === true ? '\r' : ''), actorOf(req.principal, 'aio-v2'));
      return envelope({ status: s.commands.latest?.status ?? 'completed' }, 'Input sent');
    });

    const wait = async (req: FastifyRequest, raw: unknown) => {
      const s = session(req);
      const body = parse(WaitBody, raw, 'aio');
      return waitFor(s, body.seconds ?? 30);
    };
    app.post('/v2/pty/sessions/:id/wait', async (req) => wait(req, bodyObject(req.body, 'aio')));
    app.get('/v2/pty/sessions/:id/wait', async (req) => {
      const q = req.query as { seconds?: string };
      return wait(req, q.seconds === undefined ? {} : { seconds: Number(q.seconds) });
    });

    app.post('/v2/pty/sessions/:id/signal', async (req) => {
      const s = session(req);
      const body = parse(SignalBody, bodyObject(req.body, 'aio'), 'aio');
      // Stopping a command ends the session (seed 003): signal what runs, then close the whole tree.
      const signal = (body.signal ?? 'SIGINT').toUpperCase();
      if (!/^SIG(INT|TERM|KILL|HUP|QUIT)$/.test(signal)) throw new ApiError(422, `signal must be one of SIGINT, SIGTERM, SIGKILL, SIGHUP, SIGQUIT (got ${JSON.stringify(body.signal)})`, 'VALIDATION_ERROR');
      const by = actorOf(req.principal, 'aio-v2');
      // Both halves are refused while a person holds the floor; check before signalling anything.
      s.authorize(by, 'close');
      s.signalForeground(signal as NodeJS.Signals, by);
      const report = await ctx.manager.close(s.id, by);
      return envelope({ session_id: s.id, status: 'terminated', signal, survivors: report?.survivors ?? [], tracked_by: report?.trackedBy ?? null }, 'Session stopped');
    });
  },
};
