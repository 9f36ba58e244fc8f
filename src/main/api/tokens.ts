import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import { TokenError } from './auth';
import { ApiError } from './errors';
import { requireAdmin } from './native';
import type { ApiContext, Door } from './server';
import { bodyObject, parse } from './validate';

/**
 * Per-agent tokens over REST, for the admin only (the CLI's `ptydeck token ...` does the same on the
 * file). A revoked token stops working at once and its open sockets are closed (server.ts).
 */
const CreateBody = z.object({ name: z.string().min(1).max(64) });

export const tokensDoor: Door = {
  register(app: FastifyInstance, ctx: ApiContext) {
    app.post('/api/tokens', async (req, reply) => {
      requireAdmin(req, 'Creating tokens');
      const body = parse(CreateBody, bodyObject(req.body, 'native'), 'native');
      try {
        return reply.code(201).send(ctx.tokens.create(body.name));
      } catch (err) {
        if (err instanceof TokenError) throw new ApiError(err.status, err.message);
        throw err;
      }
    });
    app.get('/api/tokens', async (req) => {
      requireAdmin(req, 'Listing tokens');
      return { tokens: ctx.tokens.list() };
    });
    app.delete('/api/tokens/:name', async (req) => {
      requireAdmin(req, 'Revoking tokens');
      const name = (req.params as { name: string }).name;
      if (!ctx.tokens.revoke(name)) throw new ApiError(404, `No token named ${JSON.stringify(name)}`);
      return { name, revoked: true };
    });
  },
};
