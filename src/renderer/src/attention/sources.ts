import type { SessionSummary } from '../../../shared/types';
import type { AttentionItem } from './items';
import { sessionAttention } from './session-source';

/**
 * Where the attention queue's items come from. A feature with things for the person to act on (the
 * approvals queue, say) adds its source to ATTENTION_SOURCES, one line, and its items are ranked with
 * the rest (items.ts Urgency.Approval is theirs).
 */
export interface AttentionSource {
  readonly name: string;
  /** Calls back whenever this source's items may have changed; returns the unsubscribe. */
  subscribe(onChange: () => void): () => void;
  /** The items now; `sessions` is the viewer's session list, for sources that refer to sessions. */
  items(sessions: ReadonlyMap<string, SessionSummary>): AttentionItem[];
}

export const ATTENTION_SOURCES: AttentionSource[] = [sessionAttention];
