import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SessionConstants } from '../terminal/constants';
import type { Session } from '../terminal/session';
import { ApiError } from './errors';
import type { ApiContext, Door } from './server';
import { bodyObject, dimension, envMap, parse, path, sessionId } from './validate';
import { checkedDir, checkInputSize } from './aio-common';
import { SendConstants } from '../terminal/send';
import { truncateOutput } from '../terminal/commands';
import { utf8Tail } from '../terminal/utf8';

/**
 * ptydeck's own routes under /api: the session listing every viewer shows, creation of terminals, and
 * floor control, which only the person's (admin) credential may use.
 */
const CreateBody = z.object({
  id: sessionId.nullable().optional(),
  cwd: path.nullable().optional(),
  cols: dimension(SessionConstants.MaxCols).nullable().optional(),
  rows: dimension(SessionConstants.MaxRows).nullable().optional(),
  env: envMap.nullable().optional(),
});

const FloorBody = z.object({ mode: z.enum(['watch', 'type', 'takeover']) });

const SendBody = z.object({
  text: z.string(),
  submit: z.boolean().optional(),
  timeout_ms: z.number().int().min(1).max(SendConstants.MaxTimeoutMs).optional(),
  idle_ms: z.number().int().min(100).max(SendConstants.MaxTimeoutMs).optional(),
});
const ReadQuery = z.object({
  offset: z.coerce.number().int().min(0).optional(),
  count: z.coerce.number().int().min(1).max(100_000).optional(),
});
const SignalBody = z.object({ signal: z.enum(['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGTSTP', 'SIGHUP']) });
const ExecBody = z.object({
  command: z.string().refine((c) => c.trim().length > 0, 'must not be empty'),
  timeout_ms: z.number().int().min(1).max(SendConstants.MaxTimeoutMs).optional(),
});

/** A page of a read is capped at this many bytes (the newest lines are kept). */
export const MaxReadBytes = 256 * 1024;

/** Agent doors type as 'agent'; the person's own credential on this door types as the person. */
const writerOf = (req: FastifyRequest) => (req.principal.kind === 'admin' ? 'person' : 'agent') as 'person' | 'agent';

/** Lines counted back from the newest: offset 0 ends at the last line. Numbered from the oldest kept. */
export function readPage(lines: string[], offset: number, count: number) {
  const total = lines.length;
  const end = Math.max(0, total - offset);
  let begin = Math.max(0, end - count);
  let text = lines.slice(begin, end).join('\n');
  let truncated = false;
  if (Buffer.byteLength(text) > MaxReadBytes) {
    // Keep the newest whole lines that fit.
    text = utf8Tail(text, MaxReadBytes);
    const firstNl = text.indexOf('\n');
    text = firstNl >= 0 ? text.slice(firstNl + 1) : text;
    begin = end - text.split('\n').length;
    truncated = true;
  }
  return { text, total_lines: total, line_begin: begin, line_end: end, truncated };
}

export function requireAdmin(req: FastifyRequest, what: string): void {
  if (req.principal.kind !== 'admin') throw new ApiError(403, `${what} needs the person's (admin) credential; agent tokens may not call it`, 'FORBIDDEN');
}

export const nativeDoor: Door = {
  register(app: FastifyInstance, ctx: ApiContext) {
    const session = (req: FastifyRequest): Session => {
      const s = ctx.sessionFor(req.principal, (req.params as { id: string }).id, 'native');
      s.touch();
      return s;
    };

    app.get('/api/whoami', async (req) => ({ principal: req.principal.name, kind: req.principal.kind }));

    app.get('/api/sessions', async (req) => ({ sessions: ctx.visibleSessions(req.principal).map((s) => s.summary()) }));

    app.post('/api/sessions', async (req) => {
      const body = parse(CreateBody, bodyObject(req.body, 'native'), 'native');
      const person = req.principal.kind === 'admin';
      const { session: s, created } = await ctx.createSession(req.principal, {
        id: body.id ?? undefined,
        origin: person ? 'viewer' : 'native',
        cwd: body.cwd ? checkedDir(body.cwd) : undefined,
        cols: body.cols,
        rows: body.rows,
        env: body.env,
        // A person's own terminal: their rc file, and their keys go in.
        loadUserRc: person,
        floor: person ? 'type' : 'watch',
      });
      return { created, session: s.summary() };
    });

    app.get('/api/sessions/:id', async (req) => session(req).summary());

    app.delete('/api/sessions/:id', async (req) => {
      const s = session(req);
      const report = await ctx.manager.close(s.id);
      return { id: s.id, closed: true, survivors: report?.survivors ?? [] };
    });

    const setFloor = (req: FastifyRequest, mode: 'watch' | 'type' | 'takeover') => {
      requireAdmin(req, 'Floor control');
      const s = session(req);
      s.setFloor(mode);
      return s.summary();
    };
    app.post('/api/sessions/:id/takeover', async (req) => setFloor(req, 'takeover'));
    app.post('/api/sessions/:id/release', async (req) => setFloor(req, 'watch'));
    app.post('/api/sessions/:id/floor', async (req) => setFloor(req, parse(FloorBody, bodyObject(req.body, 'native'), 'native').mode));

    app.post('/api/sessions/:id/send', async (req) => {
      const s = session(req);
      const body = parse(SendBody, bodyObject(req.body, 'native'), 'native');
      checkInputSize(ctx, body.text);
      const r = await s.send({ text: body.text, submit: body.submit ?? true, timeoutMs: body.timeout_ms, idleMs: body.idle_ms, writer: writerOf(req) });
      return {
        viewport: r.viewport,
        wait_reason: r.waitReason,
        session_status: r.sessionStatus.kind === 'running' ? { kind: 'running' } : { kind: 'exited', exit_code: r.sessionStatus.exitCode, signal: r.sessionStatus.signal },
        truncated: r.truncated,
        detector: r.detector,
      };
    });

    app.get('/api/sessions/:id/read', async (req) => {
      const s = session(req);
      const q = parse(ReadQuery, req.query, 'native', 'query');
      return readPage(await s.screen.allLines(), q.offset ?? 0, q.count ?? 500);
    });

    app.post('/api/sessions/:id/signal', async (req) => {
      const s = session(req);
      const body = parse(SignalBody, bodyObject(req.body, 'native'), 'native');
      // A signal acts like a keystroke: refused to an agent while a person holds the floor.
      if (req.principal.kind === 'agent') s.floor.check('agent');
      const r = s.signalForeground(body.signal as NodeJS.Signals);
      if (r.refused) throw new ApiError(400, `${body.signal} refused: ${r.refused}`, 'SIGNAL_REFUSED');
      return { delivered: r.delivered, target_pgid: r.targetPgid };
    });

    app.post('/api/sessions/:id/exec', async (req) => {
      const s = session(req);
      const body = parse(ExecBody, bodyObject(req.body, 'native'), 'native');
      const timeoutSecs = (body.timeout_ms ?? SendConstants.TimeoutMs) / 1000;
      const { record, outcome } = await s.exec(body.command, { timeoutSecs, noChangeTimeoutSecs: 0, writer: writerOf(req) });
      const running = outcome === 'timeout';
      return {
        status: running ? 'running' : record.status,
        exit_code: !running && record.status === 'completed' ? record.exitCode : null,
        output: truncateOutput(s.commands.outputText(record)),
      };
    });

    app.post('/api/sessions/:id/interrupt', async (req) => {
      // The person may always interrupt, whatever the floor: it is the safety control.
      requireAdmin(req, 'Interrupt');
      const s = session(req);
      s.write('\x03', 'system');
      return { id: s.id, sent: '^C' };
    });
  },
};
