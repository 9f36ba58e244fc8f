import type { Actor } from './actor';

/**
 * "Ask before running a line": a capability the core offers and a feature answers (approvals does).
 *
 * In a bash session owned by an agent, the shell itself asks before it runs anything (its DEBUG trap,
 * see line-gate-hook.ts): first about the whole command line it is about to run, then, while a rule
 * could still apply, about each command inside it that the line does not show literally (an alias's
 * expansion, what `eval` or `source` runs, a function's body). It waits for the answer without reading
 * the terminal; a line that is refused never runs. Shells without that hook (dash, sh) are asked at the
 * door instead: the text of an exec, a send, or a typed line before it is written (line-gate-link.ts).
 *
 * The core decides nothing: it says who typed the line (an agent with its door, or the person), and
 * whoever registered the gate answers.
 */
export interface LineQuestion {
  sessionId: string;
  /** The session's owner (an agent's name, or `admin` for the person's own sessions). */
  owner: string;
  /** What is about to run: the whole line (`scope: 'line'`) or one command in it. */
  text: string;
  /** The whole line this question belongs to (equal to `text` for a line question). */
  line: string;
  scope: 'line' | 'command';
  cwd: string;
  /** Who typed the line: an agent by name (its door the one its keys came through), or the person. */
  by: Actor;
  /** How the question came: the shell's own hook, or the door (shells without the hook). */
  via: 'shell' | 'door';
  /** Aborted when nobody waits for the answer any more (the shell was interrupted, exited, or closed). */
  signal: AbortSignal;
}

export type LineVerdict =
  /** `rest: 'line'`: nothing else in this line needs asking (the person typed it, or no rule can apply). */
  | { allow: true; rest?: 'line' | 'ask' }
  /** `message` is what the agent reads: who refused, and why. */
  | { allow: false; reason: string; message: string };

export interface LineGate {
  /** Answers at once (a plain verdict) or when a person has decided (a promise). */
  decide(q: LineQuestion): LineVerdict | Promise<LineVerdict>;
  /**
   * True when every line `by` types into a session of `owner` goes through without being looked at
   * (the person's; an agent no rule can stop): the shell is then not even asked for the line's text.
   */
  passes?(by: Actor, owner: string): boolean;
}

/** A command a person (or the policy) refused: it never ran. Doors answer 403 with `message`. */
export class DeniedError extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
    this.name = 'DeniedError';
  }
}

export const LineGateConstants = {
  /**
   * A line longer than this is refused rather than shown to a person: nobody reviews 8 MiB in a card,
   * and the shell's hook must not make the server buffer without bound. (Typed input is capped at
   * 1 MiB per write; heredocs can be longer.)
   */
  MaxQuestionBytes: 8 * 1024 * 1024,
  /** A shell that connects but says nothing is dropped after this long (its hello is a few bytes). */
  HelloTimeoutMs: 10_000,
  /** After an exec or send was refused, how long to wait for the shell's prompt before answering anyway. */
  PromptAfterDenialMs: 3000,
} as const;
