import vm from 'node:vm';
import type { Policy, PolicyAction, PolicyRule } from '../../shared/approvals';

/**
 * The person's rules for agents' commands: `{default, rules: [{pattern, action, agent?}]}`, first match
 * wins. Patterns are the person's JavaScript regular expressions; the text they run over is the agent's.
 * So matching runs inside a `vm` script with a time budget: an unlucky pattern (nested quantifiers, `.*`
 * over a huge heredoc) cannot stall the server, which serves every terminal from one thread.
 */
export const PolicyConstants = {
  MaxRules: 500,
  MaxPatternChars: 2000,
  /**
   * Matching every rule against one command gets this long; ordinary rules take microseconds. The
   * budget is wall-clock time, so a busy machine can pause a quick match past it: a match cut off is
   * tried once more with MatchRetryBudgetMs before the command is called too slow to check (and asked
   * about, rather than guessed at). A pathological pattern thus costs the server at most the sum.
   */
  MatchBudgetMs: 50,
  MatchRetryBudgetMs: 1000,
  /**
   * No flags: `^` and `$` are the start and end of what is checked (so `^cmd$` is exactly that command).
   * Each command inside a line is checked on its own as well, so `^rm` catches `true; rm ...` there.
   */
  Flags: '',
} as const;

export const DEFAULT_POLICY: Policy = { default: 'allow', rules: [] };

/** A policy the person sent that cannot be used; the message names the rule and what is wrong. */
export class PolicyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyError';
  }
}

const ACTIONS: PolicyAction[] = ['ask', 'deny', 'allow'];
const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Checks a policy as the person sent it; unknown fields are dropped. */
export function parsePolicy(body: unknown): Policy {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new PolicyError('the policy must be a JSON object: {"default": "allow" | "ask", "rules": [...]}');
  const b = body as Record<string, unknown>;
  const def = b.default ?? 'allow';
  if (def !== 'allow' && def !== 'ask') throw new PolicyError(`default must be "allow" or "ask" (got ${JSON.stringify(def)})`);
  const rawRules = b.rules ?? [];
  if (!Array.isArray(rawRules)) throw new PolicyError('rules must be a list of {pattern, action, agent?}');
  if (rawRules.length > PolicyConstants.MaxRules) throw new PolicyError(`rules: at most ${PolicyConstants.MaxRules} rules (got ${rawRules.length})`);
  const rules = rawRules.map((r, i) => parseRule(r, i));
  return { default: def, rules };
}

function parseRule(raw: unknown, i: number): PolicyRule {
  // The JSON index for programs, the number a person sees in the editor.
  const name = `rules[${i}] (rule ${i + 1})`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new PolicyError(`${name}: a rule must be an object {pattern, action, agent?}`);
  const r = raw as Record<string, unknown>;
  if (typeof r.pattern !== 'string' || r.pattern.length === 0) throw new PolicyError(`${name}: pattern must be a non-empty string (a regular expression)`);
  if (r.pattern.length > PolicyConstants.MaxPatternChars) throw new PolicyError(`${name}: pattern is longer than ${PolicyConstants.MaxPatternChars} characters`);
  try {
    new RegExp(r.pattern, PolicyConstants.Flags);
  } catch (err) {
    throw new PolicyError(`${name}: pattern ${JSON.stringify(r.pattern)} is not a valid regular expression: ${(err as Error).message}`);
  }
  if (typeof r.action !== 'string' || !ACTIONS.includes(r.action as PolicyAction)) {
    throw new PolicyError(`${name}: action must be "ask", "deny" or "allow" (got ${JSON.stringify(r.action)})`);
  }
  const rule: PolicyRule = { pattern: r.pattern, action: r.action as PolicyAction };
  if (r.agent !== undefined && r.agent !== null) {
    if (typeof r.agent !== 'string' || !AGENT_NAME.test(r.agent)) throw new PolicyError(`${name}: agent must be an agent's name (letters, digits, _ . -, up to 64; got ${JSON.stringify(r.agent)})`);
    rule.agent = r.agent;
  }
  return rule;
}

/** Commands that would switch off or rewrite ptydeck's own hook in the shell are always shown to a person. */
const HOOK_TAMPERING = /__ptydeck|\btrap\b[^\n]*\bDEBUG\b|\bextdebug\b|\bfunctrace\b|\bset\s+\+[A-Za-z]*T|\benable\s+-[a-z]*n/;

/** Rule -1 is ptydeck's own (tampering with the hook); -2: no rule matched, the default applied; -3: too slow to tell. */
export const HOOK_RULE = -1;
export const DEFAULT_RULE = -2;
export const SLOW_RULE = -3;

export interface Verdict {
  action: PolicyAction;
  rule: number;
  pattern: string | null;
  start: number | null;
  end: number | null;
}

interface MatchResult {
  rule: number;
  start: number;
  end: number;
}

// One script runs every rule, so one command costs one trip through the vm's watchdog, not one per rule.
// A rule that stops commands (ask, deny) is also tried on the text without quotes and backslashes, so
// r''m, "rm" and \rm read as rm; that second look can only make a command stricter, never let one through.
const MATCH_ALL = new vm.Script(`(() => {
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i];
    if (r.agent !== undefined && r.agent !== agent) continue;
    const m = r.re.exec(text);
    if (m) return { rule: i, start: m.index, end: m.index + m[0].length };
    if (r.stops && plain !== text && r.re.test(plain)) return { rule: i, start: -1, end: -1 };
  }
  return null;
})()`);

export class CompiledPolicy {
  private readonly compiled: { re: RegExp; agent?: string; stops: boolean }[];
  private readonly context: vm.Context;

  constructor(readonly policy: Policy) {
    this.compiled = policy.rules.map((r) => ({ re: new RegExp(r.pattern, PolicyConstants.Flags), agent: r.agent, stops: r.action !== 'allow' }));
    this.context = vm.createContext({ rules: this.compiled, agent: '', text: '', plain: '' });
  }

  /**
   * Whether any command of `agent` could be held or refused. When not, its lines are let through without
   * looking further (the shell is told not to ask again for the rest of the line).
   */
  canStop(agent: string): boolean {
    return this.policy.default === 'ask' || this.policy.rules.some((r) => r.action !== 'allow' && (r.agent === undefined || r.agent === agent));
  }

  /** The first matching rule, null for none, undefined when the budget ran out first. */
  private run(budgetMs: number): MatchResult | null | undefined {
    try {
      return MATCH_ALL.runInContext(this.context, { timeout: budgetMs }) as MatchResult | null;
    } catch {
      return undefined;
    }
  }

  decide(text: string, agent: string): Verdict {
    const hook = HOOK_TAMPERING.exec(text);
    if (hook) return { action: 'ask', rule: HOOK_RULE, pattern: HOOK_TAMPERING.source, start: hook.index, end: hook.index + hook[0].length };
    this.context.agent = agent;
    this.context.text = text;
    this.context.plain = text.replace(/['"\\]/g, '');
    let m = this.run(PolicyConstants.MatchBudgetMs);
    if (m === undefined) m = this.run(PolicyConstants.MatchRetryBudgetMs);
    this.context.text = this.context.plain = '';
    if (m === undefined) return { action: 'ask', rule: SLOW_RULE, pattern: null, start: null, end: null };
    if (m === null) return { action: this.policy.default, rule: DEFAULT_RULE, pattern: null, start: null, end: null };
    const r = this.policy.rules[m.rule];
    // Matched only without its quotes: no span of the text as written to highlight.
    const span = m.start < 0 ? { start: null, end: null } : { start: m.start, end: m.end };
    return { action: r.action, rule: m.rule, pattern: r.pattern, ...span };
  }
}

/** The rule "Always allow" adds: this agent, exactly this command. */
export function exactCommandRule(command: string, agent: string): PolicyRule {
  return { pattern: `^${command.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, action: 'allow', agent };
}
