import { createReadStream } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../api/auth';
import { AGENT_NAME_PATTERN } from '../api/auth';
import { ApiError } from '../api/errors';
import { requireAdmin } from '../api/native';
import type { ApiContext, Door } from '../api/server';
import { notFoundMessage } from '../api/server';
import { parse } from '../api/validate';
import { castStream } from './recording-file';
import { RECORDING_KEY } from './recordings';
import { TimelineConstants } from './settings';
import type { LifeOfSession, TimelineService } from './timeline-feature';

/**
 * The timeline's and recordings' routes. They pass the same guards as every door (Host, Origin, the
 * credential); ownership is the same rule too: an agent sees its own sessions' timelines and recordings,
 * live or closed, and gets 404 for anyone else's; the person sees everything.
 *
 *   GET    /api/sessions/{id}/timeline?since=&limit=     the newest life of that session id
 *   GET    /api/sessions/{id}/recording                  its .cast (application/x-asciicast)
 *   GET    /api/audit?since=&agent=&limit=               every visible session's events, oldest first
 *   GET    /api/recordings                               kept recordings, newest first (closed sessions' too)
 *   GET    /api/recordings/{key}                         one .cast
 *   GET    /api/recordings/{key}/timeline?since=&limit=  the timeline of that life
 *   DELETE /api/recordings/{key}                         the person only; a live session's is refused (409)
 */
const since = z
  .string()
  .max(64)
  .refine((v) => /^\d{1,15}$/.test(v) || isIsoTime(v), 'must be an event seq (a whole number) or an ISO 8601 time')
  .optional();
const limit = z.coerce.number().int().min(1).max(TimelineConstants.PageMaxEvents).optional();
const TimelineQuery = z.object({ since, limit });
const AuditQuery = z.object({
  since,
  limit,
  agent: z.string().max(64).regex(AGENT_NAME_PATTERN, 'must be an agent name (letters, digits and _ . -) or admin').optional(),
});

function isIsoTime(v: string): boolean {
  return /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(v) && Number.isFinite(Date.parse(v));
}

/** A repeated query parameter arrives as an array: refused by naming it, like a wrong type. */
function singleValued(query: unknown): Record<string, unknown> {
  const q = (query ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(q)) {
    if (Array.isArray(v)) throw new ApiError(400, `Invalid request: query.${k}: give it once`, 'INVALID_REQUEST_BODY', [{ loc: ['query', k], msg: 'give it once', type: 'invalid_type' }]);
  }
  return q;
}

function sinceOf(v: string | undefined): { since?: number; sinceAt?: number } {
  if (v === undefined) return {};
  return /^\d+$/.test(v) ? { since: Number(v) } : { sinceAt: Date.parse(v) };
}

const canSee = (p: Principal) => (owner: string): boolean => p.kind === 'admin' || owner === p.name;

export function timelineDoor(service: TimelineService): Door {
  return {
    register(app: FastifyInstance, _ctx: ApiContext) {
      const sessionLife = (req: FastifyRequest): LifeOfSession => {
        const id = (req.params as { id: string }).id;
        const life = service.latestLife(id, canSee(req.principal));
        if (!life) throw new ApiError(404, notFoundMessage('native', id), 'NOT_FOUND');
        return life;
      };
      const keyedLife = (req: FastifyRequest): LifeOfSession => {
        const key = (req.params as { key: string }).key;
        const life = RECORDING_KEY.test(key) ? service.life(key) : null;
        if (!life || !canSee(req.principal)(life.owner)) throw new ApiError(404, `Recording ${key} not found`, 'NOT_FOUND');
        return life;
      };
      const timeline = async (req: FastifyRequest, life: LifeOfSession) => {
        const q = parse(TimelineQuery, singleValued(req.query), 'native', 'query');
        return { session: life.session, run: life.run, live: life.live, ...(await service.query({ run: life.run, limit: q.limit, ...sinceOf(q.since) })) };
      };
      const cast = async (reply: FastifyReply, life: LifeOfSession) => {
        const file = service.recordings ? await service.recordings.readable(life.run) : null;
        if (!file) throw new ApiError(404, service.recordings ? `No recording is kept of session ${life.session} (run ${life.run})` : 'Recordings are off (PTYDECK_RECORDING=off)', 'NOT_FOUND');
        const name = `${life.session.replace(/[^A-Za-z0-9_.-]/g, '_')}-${life.run}.cast`;
        reply.type('application/x-asciicast').header('Content-Disposition', `attachment; filename="${name}"`);
        // Records become asciicast as they are sent: the length is known only at the end.
        if (file.records) return reply.send(castStream(file.path, file.size));
        return reply.header('Content-Length', String(file.size)).send(file.size > 0 ? createReadStream(file.path, { start: 0, end: file.size - 1 }) : '');
      };

      app.get('/api/sessions/:id/timeline', async (req) => timeline(req, sessionLife(req)));
      app.get('/api/sessions/:id/recording', async (req, reply) => cast(reply, sessionLife(req)));
      app.get('/api/recordings/:key', async (req, reply) => cast(reply, keyedLife(req)));
      app.get('/api/recordings/:key/timeline', async (req) => timeline(req, keyedLife(req)));

      app.get('/api/audit', async (req) => {
        const q = parse(AuditQuery, singleValued(req.query), 'native', 'query');
        const p = req.principal;
        // An agent sees its own sessions only: naming another agent matches nothing.
        const owner = p.kind === 'admin' ? q.agent : q.agent === undefined || q.agent === p.name ? p.name : null;
        if (owner === null) return { events: [], next: q.since && /^\d+$/.test(q.since) ? Number(q.since) : 0, more: false, truncated: false };
        return service.query({ owner, limit: q.limit, ...sinceOf(q.since) });
      });

      app.get('/api/recordings', async (req) => {
        const see = canSee(req.principal);
        return { recording: service.recordings !== null, recordings: (service.recordings?.list() ?? []).filter((r) => see(r.owner)) };
      });

      app.delete('/api/recordings/:key', async (req) => {
        const life = keyedLife(req);
        requireAdmin(req, 'Deleting a recording');
        const outcome = service.recordings?.delete(life.run) ?? 'missing';
        if (outcome === 'live') throw new ApiError(409, `Session ${life.session} is still live: close it before deleting its recording`, 'CONFLICT');
        if (outcome === 'missing') throw new ApiError(404, `Recording ${life.run} not found`, 'NOT_FOUND');
        return { key: life.run, deleted: true };
      });
    },
  };
}
