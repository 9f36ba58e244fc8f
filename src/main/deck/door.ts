import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { BulkResult, DeckServerFrame } from '../../shared/types';
import { actorOf, ADMIN, AGENT_NAME_PATTERN } from '../api/auth';
import { ApiError } from '../api/errors';
import { requireAdmin } from '../api/native';
import type { ApiContext, Door } from '../api/server';
import { bodyObject, parse } from '../api/validate';
import { asText, isOpen, jsonObject, keepalive, sendJson } from '../api/ws-util';
import type { Pauses } from './pause';

/**
 * The deck's door, for the person only (an agent's token gets 403):
 *
 *   POST /api/pause {agent?}      take over every session of that agent (of every agent without one),
 *                                 and those it opens while paused; answers {agent, sessions}
 *   POST /api/resume {agent?}     hand them back
 *   POST /api/interrupt {agent?}  ^C, as the person, into each of its sessions running a command
 *   GET  /api/pause               {all, agents}: who is paused
 *   /api/deck (WebSocket)         the pause state as it changes, and glances (small renderings of the
 *                                 screens) of the sessions the overview shows, a few times a second
 */
export const DeckConstants = {
  /**
   * How often the overview's screens are refreshed. Once a second reads as live on a thumbnail whose
   * text is a few pixels high; each refresh of a busy session costs the server a parse of what it
   * printed since the last, and the page a repaint (bench/cases/overview-render.ts measures both).
   */
  GlanceIntervalMs: 1000,
  /** A page that asks for more sessions than this is refused: no listing is that long (the session limit is 20 by default). */
  MaxGlanceIds: 1000,
  /** Agents paused by name at once, at most: a name may be paused before it opens anything, but not without bound. */
  MaxPausedAgents: 1000,
  /** A client this far behind in reading glances gets no new ones until it catches up. */
  MaxBufferedBytes: 1024 * 1024,
} as const;

const AgentBody = z.object({
  agent: z
    .string()
    .regex(AGENT_NAME_PATTERN, 'must be an agent name (letters, digits and _ . -)')
    .refine((a) => a !== ADMIN.name, "is the person's own name: their terminals have no agent to pause")
    .optional(),
});

export function deckDoor(pauses: Pauses): Door {
  return {
    register(app: FastifyInstance) {
      const agentOf = (req: FastifyRequest, what: string): string | null => {
        requireAdmin(req, what);
        return parse(AgentBody, bodyObject(req.body, 'native'), 'native').agent ?? null;
      };
      const answer = (agent: string | null, sessions: string[]): BulkResult => ({ agent, sessions });

      app.get('/api/pause', async (req) => {
        requireAdmin(req, 'The pause state');
        return pauses.state;
      });
      app.post('/api/pause', async (req) => {
        const agent = agentOf(req, 'Pausing agents');
        if (agent !== null && !pauses.isPaused(agent) && pauses.state.agents.length >= DeckConstants.MaxPausedAgents) {
          throw new ApiError(400, `agent: ${DeckConstants.MaxPausedAgents} agents are paused already; resume some, or pause everyone (no agent)`, 'LIMIT');
        }
        return answer(agent, pauses.pause(agent, actorOf(req.principal, 'native')));
      });
      app.post('/api/resume', async (req) => {
        const agent = agentOf(req, 'Resuming agents');
        return answer(agent, pauses.resume(agent, actorOf(req.principal, 'native')));
      });
      app.post('/api/interrupt', async (req) => {
        const agent = agentOf(req, 'Interrupting agents');
        const by = actorOf(req.principal, 'native');
        const hit: string[] = [];
        for (const s of pauses.sessionsOf(agent)) {
          if (s.shellState !== 'busy') continue;
          try {
            s.write('\x03', by);
            hit.push(s.id);
          } catch {
            // It ended between the listing and the write: nothing left to interrupt there.
          }
        }
        return answer(agent, hit);
      });
    },
    wsRoutes: (ctx) => [
      {
        path: '/api/deck',
        handle: async (up) => {
          if (up.principal.kind !== 'admin') throw new ApiError(403, "The deck socket needs the person's (admin) credential", 'FORBIDDEN');
          const ws = await up.accept();
          keepalive(ws);
          ws.once('close', ctx.presence.enter());
          serveDeck(ctx, pauses, ws);
        },
      },
    ],
  };
}

function serveDeck(ctx: ApiContext, pauses: Pauses, ws: WebSocket): void {
  const send = (f: DeckServerFrame): void => sendJson(ws, f);
  send({ type: 'deck', paused: pauses.state });
  const offPause = pauses.events.on('change', (paused) => send({ type: 'deck', paused }));

  let wanted: string[] = [];
  /** What each session looked like when its last glance went out: only a change sends another. */
  const sent = new Map<string, string>();
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  const round = async (): Promise<void> => {
    for (const id of wanted) {
      if (closed || ws.bufferedAmount > DeckConstants.MaxBufferedBytes) return;
      const s = ctx.manager.get(id);
      if (!s) continue;
      const signature = `${s.log.end}:${s.cols}x${s.rows}`;
      if (sent.get(id) === signature) continue;
      try {
        const g = await s.screen.glance();
        if (closed) return;
        sent.set(id, signature);
        send({ type: 'glance', glance: { id, ...g, lastOutputAt: s.lastOutputAt } });
      } catch {
        // Closed while we looked: its `closed` event reaches the page on the events socket.
      }
    }
  };
  const loop = (): void => {
    timer = null;
    void round().finally(() => {
      if (!closed && wanted.length) timer = setTimeout(loop, DeckConstants.GlanceIntervalMs);
    });
  };

  ws.on('message', (data, isBinary) => {
    const problem = (message: string): void => send({ type: 'error', message });
    if (isBinary) return problem('the deck socket takes JSON text frames: {"type":"glances","ids":[...]}, not binary');
    const frame = jsonObject(asText(data));
    if (!frame) return problem('deck frames are JSON objects: {"type":"glances","ids":[...]}');
    if (frame.type !== 'glances') return problem(`unknown deck frame type ${JSON.stringify(frame.type)}: the deck takes {"type":"glances","ids":[...]}`);
    const ids = frame.ids;
    if (!Array.isArray(ids) || ids.length > DeckConstants.MaxGlanceIds || !ids.every((i) => typeof i === 'string' && i.length > 0 && i.length <= 128)) {
      return problem(`glances needs "ids": an array of at most ${DeckConstants.MaxGlanceIds} session ids (strings of 1 to 128 characters)`);
    }
    // Only sessions this principal may see (the person sees all): an unknown id is simply never glanced.
    wanted = [...new Set(ids as string[])];
    for (const id of [...sent.keys()]) if (!wanted.includes(id)) sent.delete(id);
    if (timer) clearTimeout(timer);
    if (wanted.length && isOpen(ws)) loop();
  });
  ws.once('close', () => {
    closed = true;
    offPause();
    if (timer) clearTimeout(timer);
  });
}
