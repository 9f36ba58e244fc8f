/**
 * Wire types of the approvals feature (src/main/approvals), shared with the viewer. Imports nothing.
 */

export type PolicyAction = 'ask' | 'deny' | 'allow';

export interface PolicyRule {
  /** A JavaScript regular expression, matched against the whole line and against each command in it. */
  pattern: string;
  action: PolicyAction;
  /** Only this agent's commands; every agent's when absent. */
  agent?: string;
}

export interface Policy {
  /** What happens to an agent's command no rule matches. */
  default: 'allow' | 'ask';
  /** First match wins. */
  rules: PolicyRule[];
}

/** Which rule made a command wait, and where in the command it matched (for highlighting). */
export interface ApprovalMatch {
  /**
   * Index into `rules`; -1: ptydeck's own rule about commands that change its approval hook; -2: no rule
   * matched and the default is ask; -3: checking the rules took too long, so it was asked about to be safe.
   */
  rule: number;
  pattern: string | null;
  /** Character offsets into `command`; null when the default (not a rule) applied. */
  start: number | null;
  end: number | null;
}

export interface Approval {
  id: string;
  session_id: string;
  agent: string;
  /** What waits to run: the whole command line, or (scope `command`) one command inside a line. */
  command: string;
  cwd: string;
  /** The door the agent's keys came through: aio-v1, aio-v2, execd, native, mcp. */
  door: string;
  requested_at: string;
  /** When it is denied with "no decision in time" unless a person decides first. */
  expires_at: string;
  scope: 'line' | 'command';
  /** The whole line `command` belongs to (equal to `command` for scope `line`). */
  line: string;
  match: ApprovalMatch;
}

/** Frames of the viewer's approvals socket (/api/approvals/events), server to client. */
export type ApprovalsFrame = { type: 'approvals'; approvals: Approval[] } | { type: 'policy'; policy: Policy };
