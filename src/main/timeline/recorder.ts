import type { TimelineDetail } from '../../shared/timeline';
import { actorName, type Actor } from '../terminal/actor';
import type { Session, SessionEvents } from '../terminal/session';
import type { CastWriter } from './cast-writer';
import type { NewEvent } from './journal';
import type { SecretPromptProbe } from './hidden-input';
import { TimelineConstants } from './settings';

/**
 * Follows one life of one session through its events (session.ts `SessionEvents`) and turns each into
 * a timeline entry and, where it shows on screen, a recording event. It never reaches into the session:
 * what it knows comes from the events, the read-only summary, and the shell's pid (to find its terminal).
 *
 * Adding a kind of event (the approval gate's, say) is one entry in `TRANSLATE` below: the event's name
 * on the session, and what the timeline says about it.
 */
export interface RecorderSinks {
  append(e: NewEvent): void;
  /** Null when recordings are off, or this one could not be opened. */
  cast: CastWriter | null;
  probe: SecretPromptProbe;
}

type Entry = TimelineDetail & { who: string; door?: string; offset?: number };
type Translate<K extends keyof SessionEvents> = (payload: SessionEvents[K], r: SessionRecorder) => Entry | null;

const who = (a: Actor): { who: string; door?: string } => ({ who: actorName(a), ...('door' in a && a.door ? { door: a.door } : {}) });

/** The session events the timeline records, and how. `output` and `changed` are handled apart (they are not timeline entries). */
const TRANSLATE: { [K in keyof SessionEvents as string extends K ? never : K]?: Translate<K> } = {
  input: (e, r) => r.inputEntry(e),
  marker: (m, r) => r.markerEntry(m),
  refused: (e) => ({ kind: 'refused', action: e.action, ...who(e.by) }),
  floor: (e) => ({ kind: 'floor', mode: e.mode, ...who(e.by) }),
  resized: (e) => ({ kind: 'resized', cols: e.cols, rows: e.rows, ...who(e.by) }),
  signal: (e) => ({ kind: 'signal', signal: e.signal, delivered: e.delivered, ...who(e.by) }),
  exit: (e) => ({ kind: 'exit', exitCode: e.exitCode, signal: e.signal, who: 'ptydeck' }),
  closed: (e) => ({ kind: 'closed', survivors: e.survivors.length, ...who(e.by) }),
  // approvals: (e) => ({ kind: 'approval', decision: e.decision, command: e.command, reason: e.reason, ...who(e.by) }),
};

export class SessionRecorder {
  /** The log's end as the output events told it: the offset of events that carry none. */
  private end = 0;
  private readonly offs: (() => void)[] = [];
  /** Who typed last: a command line that starts is theirs. */
  private lastWriter: { who: string; door?: string } | null = null;
  private startedKey: string | null = null;
  private endedKey: string | null = null;

  constructor(
    private readonly session: Session,
    readonly run: string,
    private readonly sinks: RecorderSinks,
  ) {
    const summary = session.summary();
    const owner = session.owner;
    this.append({
      kind: 'created',
      origin: summary.origin,
      cols: summary.cols,
      rows: summary.rows,
      restored: summary.restored,
      who: owner === 'admin' ? 'person' : owner,
      door: summary.origin,
      offset: 0,
    });
    const cast = sinks.cast;
    // The one listener on the output path: note the end, hand a copy of the chunk to the recording.
    this.offs.push(
      session.events.on('output', (e) => {
        this.end = e.offset + e.data.length;
        cast?.output(e.data, Date.now());
      }),
    );
    for (const name of Object.keys(TRANSLATE) as (keyof typeof TRANSLATE)[]) {
      const translate = TRANSLATE[name] as Translate<typeof name>;
      this.offs.push(
        session.events.on(name, (payload) => {
          const entry = translate(payload, this);
          if (entry) this.append(entry);
        }),
      );
    }
    if (cast) this.offs.push(session.events.on('resized', (e) => cast.resize(e.cols, e.rows, Date.now())));
  }

  /** Stops listening (the session closed, or the server stops). */
  detach(): void {
    for (const off of this.offs.splice(0)) off();
  }

  /** An entry from outside the session's own events (a note about the recording, say). */
  note(text: string): void {
    this.append({ kind: 'note', text, who: 'ptydeck' });
  }

  inputEntry(e: SessionEvents['input']): Entry {
    const bytes = typeof e.data === 'string' ? Buffer.byteLength(e.data) : e.data.byteLength;
    const by = who(e.by);
    this.lastWriter = by;
    // Published before the bytes reach the terminal: the state they meet is the one that counts.
    const hidden = this.sinks.probe.isHidden(this.session.pid);
    let text = hidden ? `[hidden: ${bytes} bytes]` : typeof e.data === 'string' ? e.data : Buffer.from(e.data.buffer, e.data.byteOffset, e.data.byteLength).toString('utf8');
    this.sinks.cast?.input(text, Date.now());
    let truncated = false;
    if (!hidden && bytes > TimelineConstants.InputTextMaxBytes) {
      text = Buffer.from(text).subarray(0, TimelineConstants.InputTextMaxBytes).toString('utf8').replace(/\uFFFD$/, '');
      truncated = true;
    }
    return { kind: 'input', text, bytes, hidden, truncated, ...(e.command !== undefined && !hidden ? { command: e.command } : {}), ...by, offset: e.offset };
  }

  markerEntry(m: SessionEvents['marker']): Entry | null {
    if (m.kind !== 'C' && m.kind !== 'D') return null;
    // The tracker has handled the marker before it is published: the summary names the command.
    const cmd = this.session.summary().command;
    if (!cmd) return null;
    const key = cmd.startedAt + (cmd.command ?? '');
    const by = this.lastWriter ?? { who: 'ptydeck' };
    if (m.kind === 'C' || (m.kind === 'D' && this.startedKey !== key)) {
      if (this.startedKey !== key) {
        this.startedKey = key;
        this.sinks.cast?.marker(cmd.command ?? 'command', Date.now());
        const started: Entry = { kind: 'command-started', command: cmd.command, source: cmd.source, ...by, offset: m.start };
        if (m.kind === 'C') return started;
        this.append(started);
      }
    }
    if (m.kind === 'D' && this.endedKey !== key && cmd.status !== 'running') {
      this.endedKey = key;
      return { kind: 'command-ended', command: cmd.command, exitCode: cmd.exitCode, ...by, offset: m.start };
    }
    return null;
  }

  private append(entry: Entry): void {
    const { offset, ...rest } = entry;
    this.sinks.append({
      ...rest,
      at: new Date().toISOString(),
      offset: offset ?? this.end,
      session: this.session.id,
      run: this.run,
      owner: this.session.owner,
    } as NewEvent);
  }
}
