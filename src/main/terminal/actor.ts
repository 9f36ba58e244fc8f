/**
 * Who acts on a session, and through which door. Every change to a terminal (a keystroke, an exec, a
 * signal, a resize, a close) carries one, so that the floor can refuse it, and features (timeline,
 * approvals, the viewer's refusal count) can say who did what.
 *
 *   agent  — an agent's credential, by its name (a door's label says how it came: aio-v2, execd, mcp...)
 *   person — the person's own credential, through the viewer or any other door; the floor never refuses it
 *   system — ptydeck itself (^C on a timeout, the idle reaper, shutdown)
 *
 * `door` is a label for people and records; it is never used to authorize anything.
 */
export type Actor = { kind: 'agent'; name: string; door: string } | { kind: 'person'; door: string } | { kind: 'system'; door?: string };

export const SYSTEM: Actor = { kind: 'system' };

/** Actions the floor governs: each changes what the terminal runs or shows. Reads are never governed. */
export type TerminalAction = 'input' | 'exec' | 'send' | 'signal' | 'resize' | 'close';

/** The name a record shows for an actor: the agent's name, `person`, or `ptydeck`. */
export function actorName(a: Actor): string {
  return a.kind === 'agent' ? a.name : a.kind === 'person' ? 'person' : 'ptydeck';
}

export const agent = (name: string, door: string): Actor => ({ kind: 'agent', name, door });
export const person = (door: string): Actor => ({ kind: 'person', door });
