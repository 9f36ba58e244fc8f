import { randomBytes } from 'node:crypto';
import type { Approval, ApprovalMatch, Policy } from '../../shared/approvals';
import { actorName, SYSTEM, type Actor } from '../terminal/actor';
import { Emitter } from '../terminal/emitter';
import type { LineQuestion, LineVerdict } from '../terminal/line-gate';

/**
 * What the approvals feature publishes, for the viewer and for other features (a timeline records
 * them). Every decision says who made it and why.
 */
export interface ApprovalEvents extends Record<string, unknown> {
  /** An agent's command waits for a person. */
  requested: Approval;
  /** A person decided, or nobody did in time (`by` is ptydeck then, reason "no decision in time"). */
  decided: { approval: Approval; outcome: 'approved' | 'denied'; by: Actor; reason: string | null; note: string | null; remembered: boolean };
  /** Nobody waits for the answer any more (the shell was interrupted, exited, or its session closed). */
  cancelled: { approval: Approval; why: string };
  /** The policy refused a command outright (an explicit `deny` rule): no person was asked. */
  refused: { session_id: string; agent: string; command: string; door: string; match: ApprovalMatch; message: string };
  /** The pending list changed (any of the above): what the viewer redraws from. */
  changed: Approval[];
  /** The person saved a policy (directly, or by "Always allow"). */
  policy: { policy: Policy; by: Actor };
}

export const QueueConstants = {
  /**
   * At most this many commands of one session wait at once. A shell asks one question at a time; its
   * subshells add a few. More means something is asking on the shell's behalf, which gets refused.
   */
  MaxPendingPerSession: 8,
  /** A note or reason longer than this is cut (it is shown in a card and printed in a terminal). */
  MaxReasonChars: 500,
} as const;

export const NO_DECISION_IN_TIME = 'no decision in time';

export class NotPendingError extends Error {
  constructor(id: string) {
    super(`No approval ${id} is waiting (it was decided, timed out, or its command was abandoned)`);
    this.name = 'NotPendingError';
  }
}

interface Waiting {
  approval: Approval;
  resolve(v: LineVerdict): void;
  timer: NodeJS.Timeout;
  offAbort(): void;
}

/** Commands that wait for a person, with their deadlines. */
export class ApprovalQueue {
  readonly events = new Emitter<ApprovalEvents>();
  private readonly waiting = new Map<string, Waiting>();

  constructor(private readonly timeoutSecs: () => number) {}

  list(): Approval[] {
    return [...this.waiting.values()].map((w) => w.approval);
  }

  get(id: string): Approval | undefined {
    return this.waiting.get(id)?.approval;
  }

  /** Holds `q` until a person decides, nobody waits any more, or the time is up. */
  request(q: LineQuestion, agent: string, match: ApprovalMatch): Promise<LineVerdict> | LineVerdict {
    if (this.list().filter((a) => a.session_id === q.sessionId).length >= QueueConstants.MaxPendingPerSession) {
      return { allow: false, reason: 'too many commands waiting', message: `Denied: ${QueueConstants.MaxPendingPerSession} commands of this session already wait for a person` };
    }
    if (q.signal.aborted) return { allow: false, reason: 'cancelled', message: 'Not run: the shell stopped waiting for it' };
    const now = Date.now();
    const approval: Approval = {
      id: `apr_${randomBytes(9).toString('hex')}`,
      session_id: q.sessionId,
      agent,
      command: q.text,
      cwd: q.cwd,
      door: q.by.kind === 'agent' ? q.by.door : actorName(q.by),
      requested_at: new Date(now).toISOString(),
      expires_at: new Date(now + this.timeoutSecs() * 1000).toISOString(),
      scope: q.scope,
      line: q.line,
      match,
    };
    return new Promise<LineVerdict>((resolve) => {
      const onAbort = (): void => this.settle(approval.id, { kind: 'cancelled', why: 'the shell stopped waiting for it' });
      q.signal.addEventListener('abort', onAbort, { once: true });
      const timer = setTimeout(() => this.settle(approval.id, { kind: 'denied', by: SYSTEM, reason: NO_DECISION_IN_TIME, note: null }), this.timeoutSecs() * 1000);
      this.waiting.set(approval.id, { approval, resolve, timer, offAbort: () => q.signal.removeEventListener('abort', onAbort) });
      this.events.emit('requested', approval);
      this.events.emit('changed', this.list());
    });
  }

  approve(id: string, by: Actor, note: string | null, remembered: boolean): Approval {
    const a = this.get(id);
    if (!a) throw new NotPendingError(id);
    this.settle(id, { kind: 'approved', by, note: clip(note), remembered });
    return a;
  }

  deny(id: string, by: Actor, reason: string | null): Approval {
    const a = this.get(id);
    if (!a) throw new NotPendingError(id);
    this.settle(id, { kind: 'denied', by, reason: clip(reason) ?? 'no reason given', note: null });
    return a;
  }

  /** Denies everything still waiting, for this session or all (ptydeck stops, a session closes). */
  cancelAll(why: string, sessionId?: string): void {
    for (const a of this.list()) if (!sessionId || a.session_id === sessionId) this.settle(a.id, { kind: 'cancelled', why });
  }

  private settle(
    id: string,
    d: { kind: 'approved'; by: Actor; note: string | null; remembered: boolean } | { kind: 'denied'; by: Actor; reason: string; note: null } | { kind: 'cancelled'; why: string },
  ): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    clearTimeout(w.timer);
    w.offAbort();
    const a = w.approval;
    if (d.kind === 'approved') {
      w.resolve({ allow: true, rest: 'ask' });
      this.events.emit('decided', { approval: a, outcome: 'approved', by: d.by, reason: null, note: d.note, remembered: d.remembered });
    } else if (d.kind === 'denied') {
      const message = d.reason === NO_DECISION_IN_TIME ? `Denied: ${NO_DECISION_IN_TIME}` : `Denied by a person: ${d.reason}`;
      w.resolve({ allow: false, reason: d.reason, message });
      this.events.emit('decided', { approval: a, outcome: 'denied', by: d.by, reason: d.reason, note: null, remembered: false });
    } else {
      w.resolve({ allow: false, reason: 'cancelled', message: `Not run: ${d.why}` });
      this.events.emit('cancelled', { approval: a, why: d.why });
    }
    this.events.emit('changed', this.list());
  }
}

function clip(s: string | null): string | null {
  if (s === null) return null;
  const t = s.trim();
  return t ? t.slice(0, QueueConstants.MaxReasonChars) : null;
}
