import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Session } from '../terminal/session';
import { AgentOps, ExecArgs, OpenArgs, ReadArgs, RenameArgs, SendArgs, SignalArgs } from './agent-ops';
import { actorOf } from './auth';
import { ApiError } from './errors';
import type { ApiContext, Door } from './server';
import { bodyObject, parse } from './validate';

/**
 * ptydeck's own routes under /api: the agent contract (open, send, exec, read, signal, close, list;
 * see agent-ops.ts), the listing every viewer shows, and floor control, which only the person's (admin)
 * credential may use.
 */
const FloorBody = z.object({ mode: z.enum(['watch', 'type', 'takeover']) });

export function requireAdmin(req: FastifyRequest, what: string): void {
  if (req.principal.kind !== 'admin') throw new ApiError(403, `${what} needs the person's (admin) credential; agent tokens may not call it`, 'FORBIDDEN');
}

export const nativeDoor: Door = {
  register(app: FastifyInstance, ctx: ApiContext) {
    const ops = (req: FastifyRequest) => new AgentOps(ctx, req.principal, 'native');
    const id = (req: FastifyRequest): string => (req.params as { id: string }).id;
    const body = <S extends z.ZodType>(schema: S, req: FastifyRequest): z.infer<S> => parse(schema, bodyObject(req.body, 'native'), 'native');
    const session = (req: FastifyRequest): Session => {
      const s = ctx.sessionFor(req.principal, id(req), 'native');
      s.touch();
      return s;
    };

    // A session on another server (remotes/, id `host/id`) is answered there, whatever the route: the
    // routes below, and those features add under /api/sessions/{id}. Agents never see remote sessions.
    app.addHook('preHandler', async (req, reply) => {
      if (!req.routeOptions.url?.startsWith('/api/sessions/:id')) return;
      const there = ctx.elsewhere?.route(id(req));
      if (!there) return;
      if (req.principal.kind !== 'admin') throw new ApiError(404, `Session ${id(req)} not found`, 'NOT_FOUND');
      const answer = await there.http(req, reply);
      if (!reply.sent) await reply.send(answer);
      return reply;
    });

    app.get('/api/whoami', async (req) => ({ principal: req.principal.name, kind: req.principal.kind }));
    app.get('/api/sessions', async (req) => ({ sessions: [...ops(req).list(), ...(req.principal.kind === 'admin' ? (ctx.elsewhere?.list() ?? []) : [])] }));
    app.post('/api/sessions', async (req) => {
      const { session: s, created } = await ops(req).open(body(OpenArgs, req));
      return { created, session: s.summary() };
    });
    app.get('/api/sessions/:id', async (req) => session(req).summary());
    app.patch('/api/sessions/:id', async (req) => ops(req).rename(id(req), body(RenameArgs, req)));
    app.delete('/api/sessions/:id', async (req) => ops(req).close(id(req)));

    app.post('/api/sessions/:id/send', async (req) => ops(req).send(id(req), body(SendArgs, req)));
    app.post('/api/sessions/:id/exec', async (req) => ops(req).exec(id(req), body(ExecArgs, req)));
    app.get('/api/sessions/:id/read', async (req) => ops(req).read(id(req), parse(ReadArgs, req.query, 'native', 'query')));
    app.post('/api/sessions/:id/signal', async (req) => ops(req).signal(id(req), body(SignalArgs, req)));

    const setFloor = (req: FastifyRequest, mode: 'watch' | 'type' | 'takeover') => {
      requireAdmin(req, 'Floor control');
      const s = session(req);
      s.setFloor(mode, actorOf(req.principal, 'native'));
      return s.summary();
    };
    app.post('/api/sessions/:id/takeover', async (req) => setFloor(req, 'takeover'));
    app.post('/api/sessions/:id/release', async (req) => setFloor(req, 'watch'));
    app.post('/api/sessions/:id/floor', async (req) => setFloor(req, body(FloorBody, req).mode));

    app.post('/api/sessions/:id/interrupt', async (req) => {
      // The person may always interrupt, whatever the floor: it is the safety control.
      requireAdmin(req, 'Interrupt');
      const s = session(req);
      const by = actorOf(req.principal, 'native');
      // On pipes there is no line discipline to turn ^C into SIGINT: the running command's group gets it.
      if (s.mode === 'pipe') {
        const { delivered } = s.signalForeground('SIGINT', by);
        return { id: s.id, sent: delivered ? 'SIGINT' : 'nothing (no command is running)' };
      }
      s.write('\x03', by);
      return { id: s.id, sent: '^C' };
    });
  },
};
