import { useEffect, useMemo, useReducer } from 'react';
import type { SessionSummary } from '../../../shared/types';
import { byUrgency, type AttentionItem } from './items';
import { ATTENTION_SOURCES } from './sources';

const NONE: readonly AttentionItem[] = [];

/**
 * Every source's items, most urgent first, without the ones the person put away. `extra`: items a
 * feature keeps in a store of the app frame's own (the approvals), memoised by the caller.
 */
export function useAttention(sessions: ReadonlyMap<string, SessionSummary>, dismissed: ReadonlySet<string>, extra: readonly AttentionItem[] = NONE): AttentionItem[] {
  // A source other than the session list says when its items change; then the queue is built again.
  const [version, bump] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    const offs = ATTENTION_SOURCES.map((s) => s.subscribe(bump));
    return () => offs.forEach((off) => off());
  }, []);
  return useMemo(
    () =>
      [...ATTENTION_SOURCES.flatMap((s) => s.items(sessions)), ...extra]
        .filter((i) => !dismissed.has(i.key))
        .sort(byUrgency),
    // `version` stands for the other sources' state.
    [sessions, dismissed, version, extra],
  );
}
