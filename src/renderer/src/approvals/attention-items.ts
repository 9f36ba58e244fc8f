import type { Approval } from '../../../shared/approvals';
import type { SessionSummary } from '../../../shared/types';
import { Urgency, type AttentionItem } from '../attention/items';
import { displayTitle, ownerLabel } from '../sessions/describe';

/**
 * The approvals waiting for the person, as items of the deck's attention queue (attention/items.ts
 * Urgency.Approval): after a program's question, before everything else. Opening one opens its
 * terminal, where the approval banner and the approvals panel decide it.
 */
export function approvalItems(approvals: readonly Approval[], sessions: ReadonlyMap<string, SessionSummary>): AttentionItem[] {
  return approvals.map((a) => {
    const s = sessions.get(a.session_id);
    return {
      key: `approval:${a.id}`,
      sessionId: s ? a.session_id : null,
      kind: 'approval',
      urgency: Urgency.Approval,
      since: Date.parse(a.requested_at),
      headline: `Approve? ${a.command}`,
      detail: `${ownerLabel(a.agent)} · ${s ? displayTitle(s) : a.session_id} · ${a.cwd}`,
      dismissible: false,
    };
  });
}
