import { useCallback, useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import type { Approval, Policy } from '../../../shared/approvals';
import type { SessionSummary } from '../../../shared/types';
import { ApiError } from '../api/rest';
import type { Link } from '../sessions/session-store';
import type { CardActions } from './ApprovalCard';
import { approvalsApi } from './approvals-api';
import { ApprovalsStore, countBySession } from './approvals-store';

/**
 * Everything the app frame needs from approvals, in one hook: the pending list, per-session counts for
 * tabs, the panel's open state (it opens by itself when a command starts waiting), the card actions,
 * and the policy editor's state.
 */
export function useApprovals(opts: { link: Link['state']; onSession(s: SessionSummary): void; openSession(id: string): void; toast(message: string, kind?: 'error' | 'info'): void }) {
  const store = useMemo(() => new ApprovalsStore(), []);
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const [panelOpen, setPanelOpen] = useState(false);
  const [editingPolicy, setEditingPolicy] = useState(false);
  const { onSession, openSession, toast } = opts;

  useEffect(() => {
    const off = store.onArrived(() => setPanelOpen(true));
    return () => {
      off();
      store.stop();
    };
  }, [store]);

  // The socket opens once the page is signed in: before, the server could only refuse it, and the
  // backoff after that refusal would connect it only after a command had started waiting (seen as the
  // starting point, not news: no notification, no panel). It follows the events socket's view after.
  const { link } = opts;
  useEffect(() => {
    if (link === 'live') store.start();
    else if (link === 'login') store.stop();
    store.hold(link === 'down');
  }, [store, link]);

  const report = useCallback((what: string, err: unknown) => toast(`${what} failed: ${err instanceof ApiError ? err.message : String(err)}`, 'error'), [toast]);
  const decided = useCallback(
    async (a: Approval, what: string, call: () => Promise<unknown>) => {
      try {
        await call();
        store.settled(a.id);
      } catch (err) {
        report(what, err);
      }
    },
    [store, report],
  );

  const actions: CardActions = useMemo(
    () => ({
      approve: (a) => decided(a, 'Approving', () => approvalsApi.approve(a.id)),
      deny: (a, reason) => decided(a, 'Denying', () => approvalsApi.deny(a.id, reason)),
      alwaysAllow: (a) =>
        decided(a, 'Always allow', async () => {
          await approvalsApi.approve(a.id, { remember: true });
          toast(`From now on ${a.agent} may run exactly this command without asking.`, 'info');
        }),
      takeOver: (a) =>
        decided(a, 'Taking over', async () => {
          const r = await approvalsApi.takeover(a.id);
          if (r.session) onSession(r.session);
          openSession(a.session_id);
        }),
      openSession,
    }),
    [decided, onSession, openSession, toast],
  );

  const savePolicy = useCallback(async (p: Policy) => {
    await approvalsApi.savePolicy(p);
  }, []);

  return {
    /** The approvals socket has its starting list: a command that starts waiting from now on is news. */
    live: state.live,
    approvals: state.approvals,
    policy: state.policy,
    bySession: useMemo(() => countBySession(state.approvals), [state.approvals]),
    panelOpen: panelOpen || false,
    setPanelOpen,
    editingPolicy,
    setEditingPolicy,
    actions,
    savePolicy,
  };
}
