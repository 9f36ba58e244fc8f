import type { ApprovalMatch } from '../../shared/approvals';
import type { Actor } from '../terminal/actor';
import type { LineGate, LineQuestion, LineVerdict } from '../terminal/line-gate';
import type { Verdict } from './policy';
import type { PolicyStore } from './policy-store';
import type { ApprovalQueue } from './queue';

/**
 * The approvals feature's answer to the core's "ask before running a line" (terminal/line-gate.ts).
 *
 *   - the person's own lines are never held (the core says who typed a line);
 *   - an agent no rule can stop is let through for the whole line at once;
 *   - otherwise the policy decides: allow, deny outright, or ask a person (the queue).
 *
 * A line a person approved vouches for the commands written in it: bash then asks about each of them,
 * and those whose text appears in the line go without asking again. What the line does not show (an
 * alias's expansion, what eval or source runs) is still checked. An allow rule vouches for nothing: a
 * rule like `^git ` matches `git status; rm -rf ~` too, whose second command is then checked on its own.
 */
export class ApprovalGate implements LineGate {
  /** Per session: the line a person approved, while it runs. */
  private readonly vouched = new Map<string, string>();

  constructor(
    private readonly policy: PolicyStore,
    private readonly queue: ApprovalQueue,
  ) {}

  passes(by: Actor): boolean {
    return by.kind !== 'agent' || !this.policy.compiled.canStop(by.name);
  }

  decide(q: LineQuestion): LineVerdict | Promise<LineVerdict> {
    if (q.by.kind !== 'agent') return { allow: true, rest: 'line' };
    const agent = q.by.name;
    const compiled = this.policy.compiled;
    if (q.scope === 'line') this.vouched.delete(q.sessionId);
    if (!compiled.canStop(agent)) return { allow: true, rest: 'line' };
    if (q.scope === 'command' && this.vouched.get(q.sessionId) === q.line && q.line.includes(q.text)) return { allow: true, rest: 'ask' };
    const v = compiled.decide(q.text, agent);
    switch (v.action) {
      case 'allow':
        return { allow: true, rest: 'ask' };
      case 'deny': {
        const message = `Denied by the approval policy: rule ${v.rule + 1} (/${v.pattern}/) forbids this command`;
        this.queue.events.emit('refused', { session_id: q.sessionId, agent, command: q.text, door: q.by.door, match: matchOf(v), message });
        return { allow: false, reason: `the approval policy forbids it (rule ${v.rule + 1})`, message };
      }
      case 'ask': {
        const held = this.queue.request(q, agent, matchOf(v));
        if (!(held instanceof Promise)) return held;
        return held.then((verdict) => {
          if (verdict.allow && q.scope === 'line') this.vouched.set(q.sessionId, q.line);
          return verdict;
        });
      }
    }
  }

  /** The session is gone: forget what it vouched for. */
  forget(sessionId: string): void {
    this.vouched.delete(sessionId);
  }
}

function matchOf(v: Verdict): ApprovalMatch {
  return { rule: v.rule, pattern: v.pattern, start: v.start, end: v.end };
}
