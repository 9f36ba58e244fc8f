import type { TimelineDetail } from '../../shared/timeline';
import { actorName, type Actor } from '../terminal/actor';
import type { Session, SessionEvents } from '../terminal/session';
import type { RecordingWriter } from './recording-writer';
import type { NewEvent } from './journal';
import type { SecretPromptProbe } from './hidden-input';
import { TimelineConstants } from './settings';

/** A microsecond in ms: asciicast times have six decimals, so this is the smallest step after a moment. */
const MicrosecondMs = 0.001;

/**
 * Follows one life of one session through its events (session.ts `SessionEvents`) and turns each into
 * a timeline entry and, where it shows on screen, a recording event. It never reaches into the session:
 * what it knows comes from the events, the read-only summary, and the shell's pid (to find its terminal).
 *
 * Adding a kind of session event is one entry in `TRANSLATE` below: the event's name on the session,
 * and what the timeline says about it. What other features do in a session (approvals) comes through
 * `activity` (feature.ts `SessionActivity`).
 */
export interface RecorderSinks {
  append(e: NewEvent): void;
  /** Null when recordings are off, or this one could not be opened. */
  cast: RecordingWriter | null;
  probe: SecretPromptProbe;
}

type Entry = TimelineDetail & { who: string; door?: string; offset?: number };
type Translate<K extends keyof SessionEvents> = (payload: SessionEvents[K], r: SessionRecorder) => Entry | null;

const who = (a: Actor): { who: string; door?: string } => ({ who: actorName(a), ...('door' in a && a.door ? { door: a.door } : {}) });

/** The session events the timeline records, and how. `output` and `changed` are handled apart (they are not timeline entries). */
const TRANSLATE: { [K in keyof SessionEvents as string extends K ? never : K]?: Translate<K> } = {
  input: (e, r) => r.inputEntry(e),
  marker: (m, r) => r.markerEntry(m),
  command: (e, r) => r.hostCommandEntry(e),
  refused: (e) => ({ kind: 'refused', action: e.action, ...who(e.by) }),
  floor: (e) => ({ kind: 'floor', mode: e.mode, ...(e.reason ? { reason: e.reason } : {}), ...who(e.by) }),
  resized: (e) => ({ kind: 'resized', cols: e.cols, rows: e.rows, ...who(e.by) }),
  signal: (e) => ({ kind: 'signal', signal: e.signal, delivered: e.delivered, ...who(e.by) }),
  // The event carries the backend's word; tmux does not always know the status, and then the summary
  // has the one the shell announced itself (its EXIT trap).
  exit: (e, r) => ({ kind: 'exit', exitCode: e.exitCode ?? (e.signal === null ? r.summaryExitCode() : null), signal: e.signal, who: 'ptydeck' }),
  closed: (e) => ({ kind: 'closed', survivors: e.survivors.length, ...who(e.by) }),
};

export class SessionRecorder {
  /** The log's end as the output events told it: the offset of events that carry none. */
  private end = 0;
  private readonly offs: (() => void)[] = [];
  /** Who typed last: a command line that starts is theirs. */
  private lastWriter: { who: string; door?: string } | null = null;
  private startedKey: string | null = null;
  private endedKey: string | null = null;
  /**
   * Commands that started or ended inside the chunk being delivered. A marker is published before the
   * output that carries it, so the recording cuts that chunk at the marker: what came before is stamped
   * with the marker's time (and its `m` label follows it), what came after a microsecond later. Seeking
   * a replay to a timeline event's time then shows the screen exactly as it was at that marker.
   */
  private cuts: { offset: number; at: number; label: string | null }[] = [];

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
    // The one listener on the output path: note the end, hand the chunk to the recording.
    this.offs.push(
      session.events.on('output', (e) => {
        this.end = e.offset + e.data.length;
        if (!cast) return;
        if (this.cuts.length) this.recordAroundCuts(cast, e.data, e.offset);
        else cast.output(e.data, Date.now());
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

  private recordAroundCuts(cast: RecordingWriter, data: Buffer, offset: number): void {
    let pos = 0;
    let last = 0;
    for (const cut of this.cuts) {
      const at = Math.min(Math.max(cut.offset - offset, pos), data.length);
      if (at > pos) cast.output(data.subarray(pos, at), cut.at);
      if (cut.label !== null) cast.marker(cut.label, cut.at);
      else cast.cut();
      pos = at;
      last = cut.at;
    }
    this.cuts = [];
    if (pos < data.length) cast.output(data.subarray(pos), Math.max(Date.now(), last + MicrosecondMs));
  }

  /** Stops listening (the session closed, or the server stops). */
  detach(): void {
    for (const off of this.offs.splice(0)) off();
  }

  /** What another feature did in this session (an approval asked for or decided: feature.ts `SessionActivity`). */
  activity(detail: TimelineDetail, who: string, door?: string): void {
    this.append({ ...detail, who, ...(door ? { door } : {}) });
  }

  /** An entry from outside the session's own events (a note about the recording, say). */
  note(text: string): void {
    this.append({ kind: 'note', text, who: 'ptydeck' });
  }

  summaryExitCode(): number | null {
    return this.session.summary().exitCode;
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
    const now = Date.now();
    let label: string | null = null;
    if (this.startedKey !== key) {
      this.startedKey = key;
      label = cmd.command ?? 'command';
      this.append({ kind: 'command-started', command: cmd.command, source: cmd.source, ...by, offset: m.end }, now);
    }
    if (m.kind === 'D' && this.endedKey !== key && cmd.status !== 'running') {
      this.endedKey = key;
      this.append({ kind: 'command-ended', command: cmd.command, exitCode: cmd.exitCode, ...by, offset: m.end }, now);
    }
    if (this.sinks.cast) this.cuts.push({ offset: m.end, at: now, label });
    return null;
  }

  /** A bash-API command (no markers there): started and ended as its host reports them, by who ran it last. */
  hostCommandEntry(e: SessionEvents['command']): Entry {
    const by = this.lastWriter ?? { who: 'ptydeck' };
    if (e.phase === 'started') return { kind: 'command-started', command: e.command, source: 'exec', ...by };
    return { kind: 'command-ended', command: e.command, exitCode: e.exitCode, ...by };
  }

  private append(entry: Entry, now = Date.now()): void {
    const { offset, ...rest } = entry;
    this.sinks.append({
      ...rest,
      at: new Date(now).toISOString(),
      offset: offset ?? this.end,
      session: this.session.id,
      run: this.run,
      owner: this.session.owner,
    } as NewEvent);
  }
}
