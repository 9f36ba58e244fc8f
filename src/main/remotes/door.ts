import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../api/errors';
import { requireAdmin } from '../api/native';
import type { Door } from '../api/server';
import { bodyObject, parse } from '../api/validate';
import type { RemotesHub } from './hub';
import type { RemoteStore } from './store';
import { RemoteInputError } from './url-policy';

/**
 * `/api/remotes`: the person's list of remotes (agents get 403). A token goes in once, with POST, and
 * is never answered back: listings show its last characters only.
 *
 *   GET    /api/remotes                 {remotes: RemoteStatus[]}
 *   POST   /api/remotes                 {name, url, token, kind?, insecure?, ca?} -> 201 {remote}
 *   DELETE /api/remotes/{name}          {name, removed: true}
 *   POST   /api/remotes/{name}/retry    {remote}: skip the rest of the backoff
 */
const AddBody = z.object({
  name: z.string().min(1).max(64),
  url: z.string().min(1).max(2048),
  token: z.string().min(1).max(4096),
  kind: z.enum(['ptydeck', 'aio']).optional(),
  insecure: z.boolean().optional(),
  ca: z.string().min(1).max(64 * 1024).optional(),
});

export function remotesDoor(store: RemoteStore, hub: RemotesHub): Door {
  return {
    elsewhere: hub,
    register(app: FastifyInstance) {
      const name = (params: unknown): string => (params as { name: string }).name;

      app.get('/api/remotes', async (req) => {
        requireAdmin(req, 'Listing remotes');
        return { remotes: hub.remotes() };
      });

      app.post('/api/remotes', async (req, reply) => {
        requireAdmin(req, 'Adding remotes');
        const body = parse(AddBody, bodyObject(req.body, 'native'), 'native');
        try {
          const entry = store.add(body);
          return reply.code(201).send({ remote: hub.status(entry.name) });
        } catch (err) {
          if (err instanceof RemoteInputError) throw new ApiError(err.status, err.message);
          throw err;
        }
      });

      app.delete('/api/remotes/:name', async (req) => {
        requireAdmin(req, 'Removing remotes');
        const n = name(req.params);
        if (!store.remove(n)) throw new ApiError(404, `No remote named ${JSON.stringify(n)}`);
        return { name: n, removed: true };
      });

      app.post('/api/remotes/:name/retry', async (req) => {
        requireAdmin(req, 'Retrying remotes');
        const n = name(req.params);
        if (!hub.retryNow(n)) throw new ApiError(404, `No remote named ${JSON.stringify(n)}`);
        return { remote: hub.status(n) };
      });
    },
  };
}
