import { ADMIN } from '../api/auth';
import type { Emitter } from '../terminal/emitter';
import type { Feature, FeatureFactory } from '../feature';
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
      await ready.catch(() => undefined);
      await stopGate?.();
    },
  };
};
