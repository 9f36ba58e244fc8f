import type { ReactNode } from 'react';

/**
 * One thing that needs the person, in the attention queue: a question a program waits on, an approval,
 * a floor lease running out, a failed command, an agent refused while the person held the floor.
 */
export interface AttentionItem {
  /** Stable while the item stands (a dismissed item stays dismissed by it). */
  key: string;
  /** The session it is about, if any: choosing the item opens it. */
  sessionId: string | null;
  kind: string;
  /** Lower is more urgent (see Urgency). */
  urgency: number;
  /** When it started (epoch ms): older first among equally urgent ones. */
  since: number;
  /** The line a person reads first: the question, the command that failed. */
  headline: string;
  /** Who and where: the agent, the terminal's title. */
  detail: string;
  /** May the person put it away without acting on it (a failed command: yes; a question: no, answer it). */
  dismissible: boolean;
  /** A body of its own (an approval card with its buttons); the queue renders headline and detail otherwise. */
  render?: () => ReactNode;
}

/** Most urgent first: a program stopped on a question, then what a person must decide, then what went wrong. */
export const Urgency = {
  Waiting: 0,
  Approval: 1,
  LeaseEnding: 2,
  Failed: 3,
  Refused: 4,
} as const;

export function byUrgency(a: AttentionItem, b: AttentionItem): number {
  return a.urgency - b.urgency || a.since - b.since || a.key.localeCompare(b.key);
}
