import type { SessionSummary } from '../../../shared/types';
import type { AttentionItem } from './items';
import { sessionAttention } from './session-source';

/**
 * Where the attention queue's items come from. A feature with things for the person to act on adds its
 * source to ATTENTION_SOURCES, one line, and its items are ranked with the rest. One whose state lives
 * in a store the app frame owns (the approvals: approvals/attention-items.ts, Urgency.Approval) hands
 * its items to useAttention instead.
 */
export interface AttentionSource {
  readonly name: string;
  /** Calls back whenever this source's items may have changed; returns the unsubscribe. */
  subscribe(onChange: () => void): () => void;
  /** The items now; `sessions` is the viewer's session list, for sources that refer to sessions. */
  items(sessions: ReadonlyMap<string, SessionSummary>): AttentionItem[];
}

export const ATTENTION_SOURCES: AttentionSource[] = [sessionAttention];
