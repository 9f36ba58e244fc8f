/**
 * Wire types of the timeline and the recordings (src/main/timeline), shared by the server and the viewer.
 * This module imports nothing.
 */

/** Who acted: an agent's name, `person`, or `ptydeck` (the server itself: a timeout's ^C, the idle reaper). */
export type Who = string;

interface TimelineBase {
  /** Position in the journal: grows by one per event, across sessions and restarts (`?since=` takes it). */
  seq: number;
  /** ISO 8601, millisecond precision. */
  at: string;
  /** The session's output log offset at that moment (bytes the terminal had printed so far). */
  offset: number;
  who: Who;
  /** The door it came through (aio-v2, execd, native, mcp, viewer...), when there was one. */
  door?: string;
  /** The session id, which a later session may reuse... */
  session: string;
  /** ...and this life of it: the key of its recording (`/api/recordings/{run}`). */
  run: string;
  /** The principal that owns the session (`admin` for the person's own). */
  owner: string;
}

export type TimelineDetail =
  | { kind: 'created'; origin: string; cols: number; rows: number; restored: boolean }
  | { kind: 'closed'; survivors: number }
  /** `text` is what was typed; typed while the terminal did not echo (a password prompt) it is `[hidden: N bytes]`. */
  | { kind: 'input'; text: string; bytes: number; hidden: boolean; truncated: boolean; command?: string }
  | { kind: 'command-started'; command: string | null; source: 'exec' | 'typed' | null }
  | { kind: 'command-ended'; command: string | null; exitCode: number | null }
  /** `reason` when it was not the person's own choice on that tab (a pause, the floor lease). */
  | { kind: 'floor'; mode: 'watch' | 'type' | 'takeover'; reason?: string }
  /** An agent's action the floor refused while a person held it. */
  | { kind: 'refused'; action: string }
  | { kind: 'signal'; signal: string; delivered: boolean }
  | { kind: 'resized'; cols: number; rows: number }
  | { kind: 'exit'; exitCode: number | null; signal: number | null }
  /** The approval gate's decisions (requested, approved, denied), published by that feature. */
  | { kind: 'approval'; decision: 'requested' | 'approved' | 'denied'; command?: string; reason?: string }
  /** Something about the recording itself: a cap reached, a write that failed, the server stopping. */
  | { kind: 'note'; text: string };

export type TimelineEvent = TimelineBase & TimelineDetail;
export type TimelineKind = TimelineEvent['kind'];

/** A recording kept on disk: a live session's (still growing) or a closed one's. */
export interface RecordingInfo {
  /** Its key: `/api/recordings/{key}` answers the .cast. */
  key: string;
  session: string;
  owner: string;
  /** ISO 8601: when recording began (the cast's header timestamp, in whole seconds). */
  startedAt: string;
  /** When the session closed, or the server stopped recording it; null while it is live. */
  endedAt: string | null;
  live: boolean;
  /** Size of the recording on disk (the bytes printed, plus 13 for each event), not of the asciicast it is served as. */
  bytes: number;
  cols: number;
  rows: number;
  /** Output stopped being recorded (the size cap, or a failed write): says why. */
  stopped: string | null;
}

export interface TimelinePage {
  events: TimelineEvent[];
  /** Pass as `since` to get what comes after this page (newer events, or the rest of a long answer). */
  next: number;
  /** More events matched than one page holds: ask again with `since=next`. */
  more: boolean;
  /** Events this query would have matched were dropped by the journal's size bound (the oldest go first). */
  truncated: boolean;
}

/** The asciicast v2 header ptydeck writes; `ptydeck` is our own key (players ignore unknown keys). */
export interface CastHeader {
  version: 2;
  width: number;
  height: number;
  timestamp: number;
  title?: string;
  env?: Record<string, string>;
  ptydeck?: { session: string; owner: string; run: string };
}
