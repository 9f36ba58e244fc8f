import type { Approval, Policy, PolicyRule } from '../../../shared/approvals';
import type { SessionSummary } from '../../../shared/types';
import { request } from '../api/rest';

const approvalPath = (id: string, action: string): string => `/api/approvals/${encodeURIComponent(id)}/${action}`;

/** The approvals routes (src/main/approvals/door.ts); all need the person's credential, which the viewer has. */
export const approvalsApi = {
  approve: (id: string, opts: { note?: string; remember?: boolean } = {}) =>
    request<{ approval: Approval; decision: 'approved'; rule_added: PolicyRule | null }>('POST', approvalPath(id, 'approve'), opts),
  deny: (id: string, reason: string) => request<{ approval: Approval; decision: 'denied' }>('POST', approvalPath(id, 'deny'), { reason }),
  takeover: (id: string) => request<{ approval: Approval; decision: 'denied'; session: SessionSummary | null }>('POST', approvalPath(id, 'takeover'), {}),
  policy: () => request<Policy>('GET', '/api/policy'),
  savePolicy: (policy: Policy) => request<Policy>('PUT', '/api/policy', policy),
};
