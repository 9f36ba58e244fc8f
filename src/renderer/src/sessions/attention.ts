import type { SessionSummary } from '../../../shared/types';

/**
 * Moments a person should hear about even when the window is in the background: a command failed, or
 * a program is waiting for someone to answer it. Only transitions count, seen on the events socket;
 * the state a (re)connect starts from is not news.
 */
export interface Attention {
  sessionId: string;
  title: string;
  body: string;
}

const shortId = (id: string): string => id.slice(0, 8);

export function attentionFor(prev: SessionSummary | undefined, next: SessionSummary): Attention[] {
  if (!prev) return [];
  const out: Attention[] = [];
  const cmd = next.command;
  // Events are coalesced, so a quick command may go from "not started" to "finished" in one update:
  // a different start time means a different command.
  const finishedNow = cmd !== null && cmd.status !== 'running' && (prev.command?.status === 'running' || prev.command?.startedAt !== cmd.startedAt);
  if (finishedNow && cmd.exitCode !== null && cmd.exitCode !== 0) {
    out.push({
      sessionId: next.id,
      title: `Command failed (exit ${cmd.exitCode})`,
      body: `${cmd.command ?? 'command'} — ${next.owner}, terminal ${shortId(next.id)}`,
    });
  }
  if (next.waitingForInput && !prev.waitingForInput) {
    out.push({
      sessionId: next.id,
      title: 'Waiting for input',
      body: `${cmd?.command ?? 'A program'} is waiting for an answer — ${next.owner}, terminal ${shortId(next.id)}`,
    });
  }
  return out;
}

/** Electron's notifier when there is one; in a browser, Notification only if already allowed (never prompt). */
export function deliver(a: Attention): void {
  const bridge = window.ptydeck;
  if (bridge?.notify) {
    bridge.notify(a.title, a.body);
    return;
  }
  if (typeof Notification !== 'undefined' && Notification.permission === 'granted') {
    new Notification(a.title, { body: a.body, tag: `${a.sessionId}:${a.title}` });
  }
}
