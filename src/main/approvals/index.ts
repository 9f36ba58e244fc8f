import { ADMIN } from '../api/auth';
import type { Emitter } from '../terminal/emitter';
import type { Feature, FeatureFactory, SessionActivity } from '../feature';
import { actorName } from '../terminal/actor';
import { approvalsDoor } from './door';
import { ApprovalGate } from './gate';
import { PolicyStore } from './policy-store';
import { ApprovalQueue, type ApprovalEvents } from './queue';

/**
 * Approve before it runs (issue 14): the person's policy for agents' commands, the queue of commands
 * waiting for a person, and the gate that holds an agent's line in its shell until it is decided.
 *
 *   policy.ts, policy-store.ts   rules, matching with a time budget, kept in PTYDECK_HOME
 *   queue.ts                     waiting commands, decisions, timeouts; the events other features read
 *   gate.ts                      the answer to the core's "ask before running a line" (terminal/line-gate.ts)
 *   door.ts                      /api/policy, /api/approvals, the viewer's socket (person only)
 */
export interface ApprovalsFeature extends Feature {
  /** requested, decided (by whom, why), cancelled, refused (by the policy), policy, changed. */
  readonly events: Emitter<ApprovalEvents>;
}

export const approvalsFeature: FeatureFactory = (host): ApprovalsFeature => {
  const policy = new PolicyStore(host.home);
  const queue = new ApprovalQueue(() => host.config.approvalTimeoutSecs);
  const gate = new ApprovalGate(policy, queue);
  const offClosed = host.manager.events.on('closed', ({ session }) => {
    queue.cancelAll('its session was closed', session.id);
    gate.forget(session.id);
  });
  const offActivity = publishActivity(queue.events, (a) => host.events.emit('activity', a));
  let stopGate: (() => Promise<void>) | null = null;
  // The person's own sessions are theirs alone (agents get 404 for them): only agents' shells are gated.
  const ready = host.manager.setLineGate(gate, (owner) => owner !== ADMIN.name).then((stop) => {
    stopGate = stop;
  });
  return {
    name: 'approvals',
    door: approvalsDoor(policy, queue),
    events: queue.events,
    ready,
    async stop() {
      offClosed();
      queue.cancelAll('ptydeck stopped');
      offActivity();
      await ready.catch(() => undefined);
      await stopGate?.();
    },
  };
};

/**
 * The approvals' moments, as the timeline tells them (feature.ts `SessionActivity`): asked for (by the
 * agent, through its door), approved or denied (by the person, or by ptydeck when nobody decided in time),
 * refused by a deny rule (by ptydeck, naming the rule), withdrawn (the shell stopped waiting).
 */
export function publishActivity(events: Emitter<ApprovalEvents>, publish: (a: SessionActivity) => void): () => void {
  const offs = [
    events.on('requested', (a) => publish({ sessionId: a.session_id, who: a.agent, door: a.door, detail: { kind: 'approval', decision: 'requested', command: a.command } })),
    events.on('decided', (d) =>
      publish({
        sessionId: d.approval.session_id,
        who: actorName(d.by),
        detail: { kind: 'approval', decision: d.outcome, command: d.approval.command, ...(d.reason ?? d.note ? { reason: (d.reason ?? d.note)! } : {}) },
      }),
    ),
    events.on('refused', (r) => publish({ sessionId: r.session_id, who: 'ptydeck', door: r.door, detail: { kind: 'approval', decision: 'denied', command: r.command, reason: r.message } })),
    events.on('cancelled', (c) => publish({ sessionId: c.approval.session_id, who: c.approval.agent, detail: { kind: 'note', text: `approval withdrawn (${c.why}): ${c.approval.command}` } })),
  ];
  return () => offs.forEach((off) => off());
}
