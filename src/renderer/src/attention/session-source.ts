import type { SessionSummary } from '../../../shared/types';
import { displayTitle, isOwnSession, ownerLabel, refusalLines } from '../sessions/describe';
import { Urgency, type AttentionItem } from './items';
import type { AttentionSource } from './sources';

/**
 * What the session list itself says needs the person: a program waiting on a question (with the
 * question), a floor lease running out, a failed command (or a shell that exited with an error), an
 * agent refused while the person held the floor. Derived from the summaries; nothing to subscribe to
 * beyond them.
 */
export const sessionAttention: AttentionSource = {
  name: 'sessions',
  subscribe: () => () => undefined,
  items(sessions) {
    const out: AttentionItem[] = [];
    for (const s of sessions.values()) out.push(...itemsOf(s));
    return out;
  },
};

const where = (s: SessionSummary): string => `${ownerLabel(s.owner)} · ${displayTitle(s)}`;

function itemsOf(s: SessionSummary): AttentionItem[] {
  const out: AttentionItem[] = [];
  const started = s.command ? Date.parse(s.command.startedAt) : Date.parse(s.createdAt);
  if (s.waitingForInput && s.shellState !== 'exited') {
    out.push({
      key: `waiting:${s.id}:${s.command?.startedAt ?? ''}`,
      sessionId: s.id,
      kind: 'waiting',
      urgency: Urgency.Waiting,
      since: started,
      headline: s.prompt ?? `${s.command?.command ?? 'A program'} is waiting for input`,
      detail: where(s),
      dismissible: false,
    });
  }
  if (s.floorLeaseExpiresAt) {
    out.push({
      key: `lease:${s.id}:${s.floorLeaseExpiresAt}`,
      sessionId: s.id,
      kind: 'lease',
      urgency: Urgency.LeaseEnding,
      since: Date.parse(s.floorLeaseExpiresAt),
      headline: `The floor goes back to ${ownerLabel(s.owner)} at ${new Date(s.floorLeaseExpiresAt).toLocaleTimeString()}`,
      detail: `${where(s)} · no viewer of yours is connected`,
      dismissible: false,
    });
  }
  const last = s.command;
  if (s.shellState === 'exited' && s.exitCode !== null && s.exitCode !== 0) {
    out.push({
      key: `exited:${s.id}`,
      sessionId: s.id,
      kind: 'failed',
      urgency: Urgency.Failed,
      since: last?.finishedAt ? Date.parse(last.finishedAt) : started,
      headline: `The shell exited with code ${s.exitCode}`,
      detail: where(s),
      dismissible: true,
    });
  } else if (s.shellState === 'prompt' && last && last.status !== 'running' && last.exitCode !== null && last.exitCode !== 0) {
    out.push({
      key: `failed:${s.id}:${last.startedAt}`,
      sessionId: s.id,
      kind: 'failed',
      urgency: Urgency.Failed,
      since: last.finishedAt ? Date.parse(last.finishedAt) : started,
      headline: `${last.command ?? 'A command'} failed (exit ${last.exitCode})`,
      detail: where(s),
      dismissible: true,
    });
  }
  if (s.refusals > 0 && s.floor === 'takeover' && !isOwnSession(s)) {
    const lastTry = Math.max(...s.refusedBy.map((r) => Date.parse(r.last)));
    out.push({
      key: `refused:${s.id}:${s.refusals}`,
      sessionId: s.id,
      kind: 'refused',
      urgency: Urgency.Refused,
      since: Number.isFinite(lastTry) ? lastTry : Date.now(),
      headline: refusalLines(s).join('; '),
      detail: `${where(s)} · you hold the floor`,
      dismissible: true,
    });
  }
  return out;
}
