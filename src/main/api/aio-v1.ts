import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { findShell } from '../terminal/shell-integration';
import { InvalidRequestError } from '../terminal/errors';
import { existingDirectory } from '../terminal/paths';
import type { CommandRecord, ExecOptions, ExecOutcome } from '../terminal/commands';
import type { Session } from '../terminal/session';
import { checkInputSize, checkedDir, commandResult, envelope, failure, screenOf, sessionInfo, statsOf, terminalUrl, waitFor } from './aio-common';
import { streamExec, streamView, sendAsEvents } from './aio-v1-stream';
import { actorOf } from './auth';
import { ApiError } from './errors';
import { wantsEventStream } from './sse';
import type { ApiContext, Door } from './server';
import { bodyObject, optSeconds, parse, path, sessionId } from './validate';

/**
 * AIO Sandbox v1 shell routes (`/v1/shell/*`), with the shapes of its published OpenAPI file (1.9.4).
 * A v1 session is a v2 session: both dialects see the same sessions.
 */
const ExecBody = z.object({
  id: sessionId.nullable().optional(),
  exec_dir: path.nullable().optional(),
  command: z.string().refine((c) => c.trim().length > 0, 'must not be empty'),
  async_mode: z.boolean().nullable().optional(),
  timeout: optSeconds,
  strict: z.boolean().nullable().optional(),
  no_change_timeout: optSeconds,
  hard_timeout: optSeconds,
  preserve_symlinks: z.boolean().nullable().optional(),
  truncate: z.boolean().nullable().optional(),
});

const IdBody = z.object({ id: sessionId });
const WaitBody = z.object({ id: sessionId, seconds: optSeconds, max_wait_seconds: optSeconds });
const WriteBody = z.object({ id: sessionId, input: z.string(), press_enter: z.boolean().nullable().optional() });
const CreateBody = z.object({
  id: sessionId.nullable().optional(),
  exec_dir: path.nullable().optional(),
  no_change_timeout: z.number().int().min(0).max(7 * 24 * 3600).nullable().optional(),
  preserve_symlinks: z.boolean().nullable().optional(),
});
const UpdateBody = z.object({ id: sessionId, no_change_timeout: z.number().int().min(0).max(7 * 24 * 3600).nullable().optional() });

export const aioV1Door: Door = {
  register(app: FastifyInstance, ctx: ApiContext) {
    const session = (req: FastifyRequest, id: string): Session => {
      const s = ctx.sessionFor(req.principal, id, 'aio');
      s.touch();
      return s;
    };

    app.post('/v1/shell/exec', async (req, reply) => {
      const stream = wantsEventStream(req.headers.accept);
      const body = parse(ExecBody, bodyObject(req.body, 'aio'), 'aio');
      let s: Session;
      if (body.id) s = session(req, body.id);
      else s = (await ctx.createSession(req.principal, { origin: 'aio-v1', retention: 'persistent' })).session;
      let cwd: string | undefined;
      if (body.exec_dir) {
        try {
          cwd = await existingDirectory(body.exec_dir, 'exec_dir');
        } catch (err) {
          if (!(err instanceof InvalidRequestError)) throw err;
          // AIO: strict refuses with a terminated result; otherwise the session keeps its directory.
          if (body.strict) {
            const refused = envelope(
              { session_id: s.id, command: body.command, status: 'terminated', output: `${body.exec_dir} No such file or directory`, console: [...s.commands.console], exit_code: 1 },
              `Working directory ${body.exec_dir} does not exist`,
            );
            if (!stream) return refused;
            return sendAsEvents(reply, refused, refused.data.output);
          }
        }
      }
      const noChange = body.no_change_timeout ?? s.noChangeTimeoutSecs;
      const opts: ExecOptions = {
        async: body.async_mode === true,
        timeoutSecs: body.timeout,
        hardTimeoutSecs: body.hard_timeout,
        noChangeTimeoutSecs: noChange,
        cwd: cwd && cwd !== s.currentDir() ? cwd : undefined,
        writer: actorOf(req.principal, 'aio-v1'),
      };
      const answer = (record: CommandRecord, outcome: ExecOutcome) =>
        commandResult(s, record, outcome, { truncate: body.truncate !== false, timeout: body.timeout, hard: body.hard_timeout, noChange });
      if (stream) {
        await streamExec(reply, s, body.command, opts, answer);
        return reply;
      }
      const { record, outcome } = await s.exec(body.command, opts);
      return answer(record, outcome);
    });

    app.post('/v1/shell/view', async (req, reply) => {
      const body = parse(IdBody, bodyObject(req.body, 'aio'), 'aio');
      const s = session(req, body.id);
      const answer = () => {
        const { session_id, output, status, command, exit_code, console } = screenOf(s);
        return envelope({ output, session_id, console, status, command: command ?? s.commands.latest?.command ?? null, exit_code });
      };
      if (wantsEventStream(req.headers.accept)) {
        await streamView(reply, s, answer);
        return reply;
      }
      return answer();
    });

    app.post('/v1/shell/wait', async (req) => {
      const body = parse(WaitBody, bodyObject(req.body, 'aio'), 'aio');
      const s = session(req, body.id);
      const seconds = Math.min(body.seconds ?? 30, body.max_wait_seconds ?? 120);
      return waitFor(s, seconds);
    });

    app.post('/v1/shell/write', async (req) => {
      const body = parse(WriteBody, bodyObject(req.body, 'aio'), 'aio');
      const s = session(req, body.id);
      checkInputSize(ctx, body.input);
      if (!s.isAlive && s.started) throw new ApiError(400, 'Session is not active', 'SESSION_NOT_ACTIVE');
      // v1 declares press_enter required; a client that leaves it out meant a line, as 1.x ran it.
      s.write(body.input + (body.press_enter === false ? '' : '\r'), actorOf(req.principal, 'aio-v1'));
      return envelope({ status: s.commands.latest?.status ?? 'completed' }, 'Input executed successfully');
    });

    app.post('/v1/shell/kill', async (req) => {
      const body = parse(IdBody, bodyObject(req.body, 'aio'), 'aio');
      const s = session(req, body.id);
      const last = s.commands.latest;
      const exitCode = last && last.status === 'completed' ? last.exitCode : (s.exit?.exitCode ?? null);
      await ctx.manager.close(s.id, actorOf(req.principal, 'aio-v1'));
      return envelope({ status: 'terminated', exit_code: exitCode, returncode: exitCode }, 'Process terminated');
    });

    app.post('/v1/shell/sessions/create', async (req) => {
      const body = parse(CreateBody, bodyObject(req.body, 'aio'), 'aio');
      const cwd = body.exec_dir ? await checkedDir(body.exec_dir, 'exec_dir') : undefined;
      const { session: s, created } = await ctx.createSession(req.principal, {
        id: body.id ?? undefined,
        origin: 'aio-v1',
        explicit: true,
        cwd,
        noChangeTimeoutSecs: body.no_change_timeout,
      });
      return envelope({ session_id: s.id, working_dir: s.currentDir() }, created ? 'Session created successfully' : 'Session had created successfully');
    });

    app.post('/v1/shell/sessions/update', async (req) => {
      const body = parse(UpdateBody, bodyObject(req.body, 'aio'), 'aio');
      const s = session(req, body.id);
      if (body.no_change_timeout != null) s.noChangeTimeoutSecs = body.no_change_timeout;
      return envelope({ session_id: s.id, no_change_timeout: s.noChangeTimeoutSecs }, 'Session updated successfully');
    });

    app.get('/v1/shell/sessions', async (req) => {
      const sessions = Object.fromEntries(
        ctx.visibleSessions(req.principal).map((s) => {
          const { working_dir, created_at, last_used_at, age_seconds, status, current_command, ...rest } = sessionInfo(s);
          return [s.id, { working_dir, created_at, last_used_at, age_seconds, status, current_command, ...rest }];
        }),
      );
      return envelope({ sessions });
    });

    app.delete('/v1/shell/sessions', async (req) => {
      const mine = ctx.visibleSessions(req.principal);
      const by = actorOf(req.principal, 'aio-v1');
      // All or nothing: a session the person holds refuses the whole call (423) before any is closed.
      for (const s of mine) s.authorize(by, 'close');
      await Promise.all(mine.map((s) => ctx.manager.close(s.id, by)));
      return envelope({ cleaned_sessions: mine.length }, `Cleaned ${mine.length} sessions`);
    });

    app.delete('/v1/shell/sessions/:id', async (req) => {
      const id = (req.params as { id: string }).id;
      const s = ctx.manager.get(id);
      if (!s || !ctx.canSee(req.principal, s)) return failure(`Session ${id} not found`);
      await ctx.manager.close(id, actorOf(req.principal, 'aio-v1'));
      return envelope({ session_id: id }, 'Session cleaned up');
    });

    app.get('/v1/shell/sessions/stats', async (req) => envelope(statsOf(ctx, req)));

    app.get('/v1/shell/terminal-url', async (req) => {
      const q = req.query as { session_id?: string };
      if (q.session_id !== undefined) {
        const s = session(req, q.session_id);
        return envelope(terminalUrl(req, ctx, s.id), 'Terminal URL');
      }
      // A GET that creates: a page can make the browser send one (<img src=...>), so the viewer's session is not enough.
      if (req.credential === 'viewer') {
        throw new ApiError(403, "GET /v1/shell/terminal-url without session_id creates a terminal: call it with a token (Authorization or x-api-key), not the viewer's session", 'FORBIDDEN');
      }
      const { session: s } = await ctx.createSession(req.principal, { origin: 'aio-v1' });
      return envelope(terminalUrl(req, ctx, s.id), 'Terminal created');
    });

    app.get('/v1/capabilities', async () => {
      const shell = findShell(ctx.manager.config.shell);
      const name = shell.file.split('/').pop() ?? 'sh';
      return envelope({
        exec: { available: true, pty: name === 'bash' || name === 'sh' || name === 'dash', shell: name, shell_path: shell.file, backend: ctx.config.backend },
        files: { available: false },
        code_interpreter: { available: false },
        browser: { available: false },
        computer: { available: false },
      });
    });

    app.get('/v1/ping', async () => envelope('pong', 'pong'));
    app.get('/health', async () => ({ status: 'ok' }));
  },
};
