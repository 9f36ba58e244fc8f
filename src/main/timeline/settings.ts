/**
 * The timeline's and the recordings' settings, read from the environment with the rest of the
 * configuration (config.ts passes its integer parser in, so a bad value is reported the same way).
 */
export interface TimelineSettings {
  /** PTYDECK_RECORDING=off turns recordings off (the timeline is always kept). */
  recording: boolean;
  /** PTYDECK_TIMELINE_BYTES: the journal's size on disk; the oldest events are dropped first. */
  timelineBytes: number;
  /** PTYDECK_RECORDING_MAX_BYTES: one recording's cap; past it, output is no longer recorded (a note says so). */
  recordingMaxBytes: number;
  /** PTYDECK_RECORDINGS_TOTAL_BYTES: all recordings together; the oldest closed ones are deleted first. */
  recordingsTotalBytes: number;
  /** PTYDECK_RECORDING_MAX_AGE_DAYS: closed recordings older than this are deleted; 0 keeps them until deleted. */
  recordingMaxAgeDays: number;
}

const MiB = 1024 * 1024;

export const TimelineDefaults: TimelineSettings = {
  recording: true,
  /** About half a million events: weeks of a busy deck. */
  timelineBytes: 64 * MiB,
  /** Six times the output log (10 MiB): a long build's output, while one runaway flood cannot fill the disk. */
  recordingMaxBytes: 64 * MiB,
  recordingsTotalBytes: 1024 * MiB,
  recordingMaxAgeDays: 30,
};

type IntParser = (name: string, raw: string | undefined, fallback: number, min: number, max: number) => number;

export function parseTimelineSettings(env: NodeJS.ProcessEnv, int: IntParser, fail: (message: string) => Error): TimelineSettings {
  const flag = (env.PTYDECK_RECORDING ?? '').trim().toLowerCase();
  if (flag && !['on', 'off', '1', '0', 'true', 'false'].includes(flag)) throw fail(`PTYDECK_RECORDING must be on or off (got ${JSON.stringify(env.PTYDECK_RECORDING)})`);
  return {
    recording: flag ? ['on', '1', 'true'].includes(flag) : TimelineDefaults.recording,
    timelineBytes: int('PTYDECK_TIMELINE_BYTES', env.PTYDECK_TIMELINE_BYTES, TimelineDefaults.timelineBytes, 64 * 1024, 64 * 1024 * MiB),
    recordingMaxBytes: int('PTYDECK_RECORDING_MAX_BYTES', env.PTYDECK_RECORDING_MAX_BYTES, TimelineDefaults.recordingMaxBytes, 4096, 64 * 1024 * MiB),
    recordingsTotalBytes: int('PTYDECK_RECORDINGS_TOTAL_BYTES', env.PTYDECK_RECORDINGS_TOTAL_BYTES, TimelineDefaults.recordingsTotalBytes, 4096, 1024 * 1024 * MiB),
    recordingMaxAgeDays: int('PTYDECK_RECORDING_MAX_AGE_DAYS', env.PTYDECK_RECORDING_MAX_AGE_DAYS, TimelineDefaults.recordingMaxAgeDays, 0, 36500),
  };
}

/** Every tuning number of the timeline and recordings, each with the reason for its value. */
export const TimelineConstants = {
  /** Output chunks are gathered this long into one output record ("o" event): one frame at 60 Hz, finer than a player shows. */
  CastCoalesceMs: 16,
  /** An output record holds at most about this much, and records are written once this much waits: a reader converts a record at a time. */
  CastRecordMaxBytes: 256 * 1024,
  /** Records wait at most this long for their write: what a crash of the server can take from a recording. */
  CastWriteEveryMs: 250,
  /**
   * Bytes of one recording gathered or being written and not yet on disk: past this the disk is not
   * keeping up, and output is skipped (noted) rather than held in memory. 4 MiB is a quarter second of
   * the fastest PTY here; a disk that cannot take that is not going to catch up.
   */
  CastQueueMaxBytes: 4 * MiB,
  /** Output is copied into staging blocks of this size (below glibc's mmap threshold, like the output log's segments). */
  CastBlockBytes: 64 * 1024,
  /** Written blocks kept for any recording to fill again: 16 MiB, a quarter second of several floods. */
  CastFreeBlocks: 256,
  /** Journal lines are written in batches at most this often, so a burst of keystrokes is one write. */
  JournalFlushMs: 50,
  /** Journal bytes queued and not yet written before new events are dropped (noted once): a stuck disk must not grow memory. */
  JournalQueueMaxBytes: 4 * MiB,
  /** The journal is cut into this many segments, so dropping the oldest frees a sixteenth at a time. */
  JournalSegments: 16,
  /** Typed text kept per input event; a paste longer than this is cut (the byte count stays exact). */
  InputTextMaxBytes: 4096,
  /** How often closed recordings are checked for age. */
  AgeCheckMs: 60 * 60 * 1000,
  /** At most this many events answer one query; `since` pages through the rest. */
  PageMaxEvents: 5000,
} as const;
