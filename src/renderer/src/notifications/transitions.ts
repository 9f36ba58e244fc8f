import type { SessionSummary } from '../../../shared/types';
import { displayTitle, ownerLabel } from '../sessions/describe';

/**
 * Moments a person should hear about even when the window is in the background: a command failed, or
 * a program is waiting for someone to answer it. Only transitions count, seen on the events socket;
 * the state a (re)connect starts from is not news.
 */
export interface Attention {
  sessionId: string;
  title: string;
  body: string;
  /** One notification per key: a wait is its command and its question, so a wait that flickers is still one. */
  key: string;
}

export function attentionFor(prev: SessionSummary | undefined, next: SessionSummary): Attention[] {
  if (!prev) return [];
  const out: Attention[] = [];
  const cmd = next.command;
  const where = `${ownerLabel(next.owner)} · ${displayTitle(next)}`;
  // Events are coalesced, so a quick command may go from "not started" to "finished" in one update:
  // a different start time means a different command.
  const finishedNow = cmd !== null && cmd.status !== 'running' && (prev.command?.status === 'running' || prev.command?.startedAt !== cmd.startedAt);
  if (finishedNow && cmd.exitCode !== null && cmd.exitCode !== 0) {
    out.push({ sessionId: next.id, title: `Command failed (exit ${cmd.exitCode})`, body: `${cmd.command ?? 'command'} — ${where}`, key: `failed:${next.id}:${cmd.startedAt}` });
  }
  if (next.waitingForInput && !prev.waitingForInput) {
    out.push({
      sessionId: next.id,
      title: 'Waiting for input',
      body: `${next.prompt ?? `${cmd?.command ?? 'A program'} is waiting for an answer`} — ${where}`,
      key: `waiting:${next.id}:${cmd?.startedAt ?? ''}:${next.prompt ?? ''}`,
    });
  }
  if (next.shellState === 'exited' && prev.shellState !== 'exited' && next.exitCode !== null && next.exitCode !== 0) {
    out.push({ sessionId: next.id, title: `Shell exited with code ${next.exitCode}`, body: where, key: `exited:${next.id}` });
  }
  return out;
}
