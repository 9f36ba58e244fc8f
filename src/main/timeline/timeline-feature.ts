import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { CastHeader, RecordingInfo } from '../../shared/timeline';
import type { Feature, FeatureFactory } from '../feature';
import type { Session } from '../terminal/session';
import type { RecordingWriter } from './recording-writer';
import { SecretPromptProbe } from './hidden-input';
import { Journal, type JournalQuery } from './journal';
import { SessionRecorder } from './recorder';
import { RecordingStore } from './recordings';
import { TimelineConstants, type TimelineSettings } from './settings';
import { timelineDoor } from './timeline-routes';

/**
 * The timeline and recordings feature: who did what in every session, and what the screen showed,
 * kept in PTYDECK_HOME after the sessions close.
 *
 *   journal.ts     the timeline: JSON lines, bounded, oldest first out
 *   recordings.ts  one recording per life of a session (recording-writer.ts writes it, served as asciicast v2)
 *   recorder.ts    one session's events -> timeline entries and recording events
 *   timeline-routes.ts   /api/sessions/{id}/timeline, /api/audit, /api/recordings...
 */
export interface LifeOfSession {
  run: string;
  session: string;
  owner: string;
  live: boolean;
}

/** What the routes ask of the feature. */
export interface TimelineService {
  readonly journal: Journal;
  readonly recordings: RecordingStore | null;
  /** The newest life of a session id that `canSee` allows: the live one, else the latest kept. */
  latestLife(sessionId: string, canSee: (owner: string) => boolean): LifeOfSession | null;
  life(run: string): LifeOfSession | null;
  query(q: JournalQuery): ReturnType<Journal['query']>;
}

export const timelineFeature: FeatureFactory = (host): Feature => {
  const settings: TimelineSettings = host.config.timeline;
  const reported = new Set<string>();
  // Reported once each: a full disk must not flood the log either.
  const report = (problem: string): void => {
    const key = problem.replace(/\d+/g, '#');
    if (reported.has(key)) return;
    reported.add(key);
    console.error(`ptydeck: ${problem}`);
  };
  const journal = new Journal(join(host.home, 'timeline'), settings.timelineBytes, report);
  const recordings = settings.recording ? new RecordingStore(join(host.home, 'recordings'), settings, report) : null;
  const live = new Map<Session, SessionRecorder>();

  const begin = (session: Session): void => {
    // A session whose shell failed to start is dropped without a close: its life ends here.
    for (const [s, r] of live) if (s.id === session.id && s !== session) end(s, r, 'the session is gone');
    const run = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    const summary = session.summary();
    let cast: RecordingWriter | null = null;
    if (recordings) {
      const header: CastHeader & { ptydeck: NonNullable<CastHeader['ptydeck']> } = {
        version: 2,
        width: summary.cols,
        height: summary.rows,
        timestamp: Math.floor(Date.now() / 1000),
        title: `${session.id} (${session.owner === 'admin' ? 'person' : session.owner})`,
        env: { TERM: 'xterm-256color' },
        ptydeck: { session: session.id, owner: session.owner, run },
      };
      cast = recordings.open(header, (why) => recorder.note(`recording stopped: ${why}`));
    }
    const recorder = new SessionRecorder(session, run, { append: (e) => journal.append(e), cast, probe: new SecretPromptProbe() });
    live.set(session, recorder);
    session.events.on('closed', () => end(session, recorder));
  };

  const end = (session: Session, recorder: SessionRecorder, note?: string): void => {
    if (live.get(session) !== recorder) return;
    live.delete(session);
    if (note) recorder.note(note);
    recorder.detach();
    void recordings?.finish(recorder.run);
  };

  const offRegistered = host.manager.events.on('registered', begin);
  // Other features' moments in a session (approvals): in that session's current life.
  const offActivity = host.events.on('activity', (a) => {
    for (const [s, r] of live) if (s.id === a.sessionId) r.activity(a.detail, a.who, a.door);
  });
  // tmux sessions taken back at start are registered before the features exist: each starts a life here.
  for (const s of host.manager.list()) if (!s.closed) begin(s);
  const ageTimer = setInterval(() => recordings?.ageOut(), TimelineConstants.AgeCheckMs);
  ageTimer.unref();

  const lifeOf = (run: string): LifeOfSession | null => {
    for (const [s, r] of live) if (r.run === run) return { run, session: s.id, owner: s.owner, live: true };
    const rec = recordings?.get(run);
    if (rec) return { run, session: rec.session, owner: rec.owner, live: false };
    const facts = journal.runFacts(run);
    return facts ? { run, session: facts.session, owner: facts.owner, live: false } : null;
  };

  const service: TimelineService = {
    journal,
    recordings,
    life: lifeOf,
    latestLife(sessionId, canSee) {
      for (const [s, r] of live) if (s.id === sessionId && canSee(s.owner)) return { run: r.run, session: s.id, owner: s.owner, live: true };
      const kept: { run: string; owner: string; startedAt: string }[] = [
        ...journal.allRuns().filter((f) => f.session === sessionId).map((f) => ({ run: f.run, owner: f.owner, startedAt: f.startedAt })),
        ...(recordings?.list() ?? []).filter((r: RecordingInfo) => r.session === sessionId).map((r) => ({ run: r.key, owner: r.owner, startedAt: r.startedAt })),
      ].filter((k) => canSee(k.owner));
      // Run keys begin with the time they began (base 36, fixed width for centuries): the greatest is the newest.
      kept.sort((a, b) => (a.run < b.run ? 1 : a.run > b.run ? -1 : 0));
      return kept[0] ? { run: kept[0].run, session: sessionId, owner: kept[0].owner, live: false } : null;
    },
    query: (q) => journal.query(q),
  };

  return {
    name: 'timeline',
    door: timelineDoor(service),
    async stop() {
      offRegistered();
      offActivity();
      clearInterval(ageTimer);
      // Sessions still here were not closed (tmux sessions outlive the server): their lives end with it.
      for (const [s, r] of [...live]) end(s, r, 'the server stopped; the session may go on without being recorded');
      await recordings?.closeAll();
      await journal.close();
    },
  };
};
