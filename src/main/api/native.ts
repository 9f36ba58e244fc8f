import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SessionConstants } from '../terminal/constants';
import type { Session } from '../terminal/session';
import { ApiError } from './errors';
import type { ApiContext, Door } from './server';
import { bodyObject, dimension, envMap, parse, path, sessionId } from './validate';
import { checkedDir } from './aio-common';

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

    app.post('/api/sessions/:id/interrupt', async (req) => {
      // The person may always interrupt, whatever the floor: it is the safety control.
      requireAdmin(req, 'Interrupt');
      const s = session(req);
      s.write('\x03', 'system');
      return { id: s.id, sent: '^C' };
    });
  },
};
