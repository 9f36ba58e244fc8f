import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApprovalsFrame } from '../../shared/approvals';
import { actorOf } from '../api/auth';
import type { Actor } from '../terminal/actor';
import { ApiError } from '../api/errors';
import { requireAdmin } from '../api/native';
import type { ApiContext, Door, WsRoute } from '../api/server';
import { bodyObject, parse } from '../api/validate';
import { keepalive, sendJson } from '../api/ws-util';
import { exactCommandRule, PolicyError } from './policy';
import type { PolicyStore } from './policy-store';
import { NotPendingError, QueueConstants, type ApprovalQueue } from './queue';

/**
 * The approvals feature's routes. Every one needs the person's credential: an agent may neither read
 * nor change the policy, nor see or decide approvals (its own included) — 403.
 *
 *   GET  /api/policy                    {default, rules}
 *   PUT  /api/policy                    the same; 400 naming the rule that is wrong
 *   GET  /api/approvals                 {approvals: [{id, session_id, agent, command, cwd, door, requested_at, ...}]}
 *   POST /api/approvals/{id}/approve    {note?, remember?}: remember adds an allow rule for that agent and exact command
 *   POST /api/approvals/{id}/deny       {reason?}
 *   POST /api/approvals/{id}/takeover   {reason?}: deny it and take the session's floor, in one step
 *   WS   /api/approvals/events          the pending list and the policy, pushed as they change
 */
const ApproveBody = z.object({
  note: z.string().max(QueueConstants.MaxReasonChars * 4).nullable().optional(),
  remember: z.boolean().nullable().optional(),
});
const DenyBody = z.object({ reason: z.string().max(QueueConstants.MaxReasonChars * 4).nullable().optional() });

const TAKEOVER_REASON = 'a person took over the terminal';

export function approvalsDoor(policy: PolicyStore, queue: ApprovalQueue): Door {
  const onPolicyChanged = (by: Actor): void => queue.events.emit('policy', { policy: policy.policy, by });
  const person = (req: FastifyRequest, what: string) => {
    requireAdmin(req, what);
    return actorOf(req.principal, 'native');
  };
  const idOf = (req: FastifyRequest): string => (req.params as { id: string }).id;
  const decide = <T>(run: () => T): T => {
    try {
      return run();
    } catch (err) {
      if (err instanceof NotPendingError) throw new ApiError(404, err.message, 'NOT_FOUND');
      throw err;
    }
  };
  const pending = (id: string) => decide(() => queue.get(id) ?? (() => { throw new NotPendingError(id); })());

  return {
    register(app: FastifyInstance, ctx: ApiContext) {
      app.get('/api/policy', async (req) => {
        person(req, 'Reading the approval policy');
        return policy.policy;
      });

      app.put('/api/policy', async (req) => {
        const by = person(req, 'Changing the approval policy');
        try {
          const saved = policy.replace(req.body ?? {});
          onPolicyChanged(by);
          return saved;
        } catch (err) {
          if (err instanceof PolicyError) throw new ApiError(400, `Invalid policy: ${err.message}`, 'INVALID_POLICY');
          throw err;
        }
      });

      app.get('/api/approvals', async (req) => {
        person(req, 'Listing approvals');
        return { approvals: queue.list() };
      });

      app.post('/api/approvals/:id/approve', async (req) => {
        const by = person(req, 'Approving a command');
        const body = parse(ApproveBody, bodyObject(req.body, 'native'), 'native');
        const waiting = pending(idOf(req));
        let ruleAdded = null;
        if (body.remember === true) {
          // First match wins: the new allow rule goes first, or an earlier ask rule would still catch it.
          ruleAdded = exactCommandRule(waiting.command, waiting.agent);
          policy.replace({ ...policy.policy, rules: [ruleAdded, ...policy.policy.rules] });
          onPolicyChanged(by);
        }
        const approval = decide(() => queue.approve(idOf(req), by, body.note ?? null, body.remember === true));
        return { approval, decision: 'approved', rule_added: ruleAdded };
      });

      app.post('/api/approvals/:id/deny', async (req) => {
        const by = person(req, 'Denying a command');
        const body = parse(DenyBody, bodyObject(req.body, 'native'), 'native');
        const approval = decide(() => queue.deny(idOf(req), by, body.reason ?? null));
        return { approval, decision: 'denied' };
      });

      app.post('/api/approvals/:id/takeover', async (req) => {
        const by = person(req, 'Taking over from an approval');
        const body = parse(DenyBody, bodyObject(req.body, 'native'), 'native');
        const session = ctx.manager.get(pending(idOf(req)).session_id);
        // The floor first: the agent cannot slip another command in between the denial and the takeover.
        session?.setFloor('takeover', by);
        const approval = decide(() => queue.deny(idOf(req), by, body.reason ?? TAKEOVER_REASON));
        return { approval, decision: 'denied', session: session?.summary() ?? null };
      });
    },

    wsRoutes(): WsRoute[] {
      return [
        {
          path: '/api/approvals/events',
          handle: async (up) => {
            if (up.principal.kind !== 'admin') throw new ApiError(403, "The approvals socket needs the person's (admin) credential", 'FORBIDDEN');
            const ws = await up.accept();
            keepalive(ws);
            const send = (f: ApprovalsFrame): void => sendJson(ws, f);
            send({ type: 'policy', policy: policy.policy });
            send({ type: 'approvals', approvals: queue.list() });
            const offs = [
              queue.events.on('changed', (approvals) => send({ type: 'approvals', approvals })),
              queue.events.on('policy', (p) => send({ type: 'policy', policy: p.policy })),
            ];
            ws.on('message', () => {
              // One-way: decisions go through the REST routes, which check the body.
            });
            ws.once('close', () => offs.forEach((off) => off()));
          },
        },
      ];
    },
  };
}
