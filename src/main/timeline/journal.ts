import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { TimelineEvent, TimelinePage } from '../../shared/timeline';
import { TimelineConstants } from './settings';

/** An event before the journal numbers it. */
export type NewEvent = TimelineEvent extends infer E ? (E extends TimelineEvent ? Omit<E, 'seq'> : never) : never;

export interface JournalQuery {
  /** Only events with a greater seq. */
  since?: number;
  /** Only events at or after this time (ms since the epoch). */
  sinceAt?: number;
  run?: string;
  owner?: string;
  limit?: number;
}

/** What the journal knows of one session's life from its events (kept for closed sessions too). */
export interface RunFacts {
  run: string;
  session: string;
  owner: string;
  firstSeq: number;
  startedAt: string;
  endedAt: string | null;
  /** Its latest event's time. */
  lastAt: string;
}

interface Segment {
  name: string;
  firstSeq: number;
  lastSeq: number;
  bytes: number;
  runs: Set<string>;
  owners: Set<string>;
  /** Takes no more lines: it ends in a line cut short (a crash mid-write), so the next line starts a new file. */
  sealed?: boolean;
}

const SEGMENT_NAME = /^(\d{12})\.jsonl$/;

/**
 * The timeline's store: JSON lines in `<home>/timeline/`, one event a line, cut into numbered segments.
 * The whole is bounded by `maxBytes`: when it grows past that, the oldest segment is deleted, so the
 * oldest events go first. Every file is 0600.
 *
 * Appending costs the caller a JSON.stringify and an array push; lines are written in batches off the
 * caller's path (at most every JournalFlushMs). A write that fails (a full disk) is reported once, and
 * events are dropped rather than held without bound; the sessions never notice.
 */
export class Journal {
  private readonly segments: Segment[] = [];
  private readonly runs = new Map<string, RunFacts>();
  private seq = 0;
  private pending: { line: string; event: TimelineEvent }[] = [];
  private pendingBytes = 0;
  private inflight: { line: string; event: TimelineEvent }[] = [];
  private handle: FileHandle | null = null;
  private handleName: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private failed: string | null = null;
  private dropped = 0;
  /** The first seq ever dropped by the bound is below this. */
  private droppedBelow = 0;
  private readonly segmentBytes: number;

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly report: (problem: string) => void,
  ) {
    this.segmentBytes = Math.max(16 * 1024, Math.floor(maxBytes / TimelineConstants.JournalSegments));
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.load();
  }

  /** Sessions (lives of a session id) the journal has events of, oldest first. */
  allRuns(): RunFacts[] {
    return [...this.runs.values()].sort((a, b) => a.firstSeq - b.firstSeq);
  }

  runFacts(run: string): RunFacts | undefined {
    return this.runs.get(run);
  }

  get lastSeq(): number {
    return this.seq;
  }

  append(e: NewEvent): TimelineEvent {
    const event = { seq: ++this.seq, ...e } as TimelineEvent;
    this.noteRun(event);
    const line = JSON.stringify(event) + '\n';
    if (this.pendingBytes + line.length > TimelineConstants.JournalQueueMaxBytes) {
      if (this.dropped++ === 0) this.report(`timeline events are being dropped: ${TimelineConstants.JournalQueueMaxBytes} bytes wait for the disk${this.failed ? ` (${this.failed})` : ''}`);
      return event;
    }
    this.pending.push({ line, event });
    this.pendingBytes += line.length;
    this.timer ??= setTimeout(() => void this.flush(), TimelineConstants.JournalFlushMs);
    return event;
  }

  /** Writes what is queued. Resolves once it is on disk (or failed). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.flushing ??= this.writeQueued().finally(() => {
      this.flushing = null;
      if (this.pending.length) void this.flush();
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    await this.flush();
    await this.flushing;
    await this.handle?.close().catch(() => undefined);
    this.handle = null;
  }

  async query(q: JournalQuery): Promise<TimelinePage> {
    const limit = Math.min(q.limit ?? TimelineConstants.PageMaxEvents, TimelineConstants.PageMaxEvents);
    const since = q.since ?? 0;
    const wanted = (e: TimelineEvent): boolean =>
      e.seq > since && (q.run === undefined || e.run === q.run) && (q.owner === undefined || e.owner === q.owner) && (q.sinceAt === undefined || Date.parse(e.at) >= q.sinceAt);
    const events: TimelineEvent[] = [];
    let seen = since;
    let more = false;
    const take = (e: TimelineEvent): boolean => {
      if (e.seq <= seen || e.seq > upTo) return true;
      seen = e.seq;
      if (!wanted(e)) return true;
      if (events.length >= limit) {
        more = true;
        return false;
      }
      events.push(e);
      return true;
    };
    // Queued events are held in memory until written; take a copy first so a flush meanwhile is harmless.
    // The answer covers what was recorded up to now, no further: an event recorded while the segments are
    // read may be in neither the copy nor the text read, and `next` must not pass over it.
    const upTo = this.seq;
    const unwritten = [...this.inflight, ...this.pending].map((p) => p.event);
    outer: for (const seg of [...this.segments]) {
      if (seg.lastSeq <= since) continue;
      if (q.run !== undefined && !seg.runs.has(q.run)) continue;
      if (q.owner !== undefined && !seg.owners.has(q.owner)) continue;
      let text: string;
      try {
        text = await readFile(join(this.dir, seg.name), 'utf8');
      } catch {
        continue; // dropped by the bound while we read
      }
      for (const line of text.split('\n')) {
        const e = parseLine(line);
        if (e && !take(e)) break outer;
      }
    }
    if (!more) for (const e of unwritten) if (!take(e)) break;
    const truncated = since < this.droppedBelow - 1 && (q.run === undefined || (this.runs.get(q.run)?.firstSeq ?? 0) < this.droppedBelow);
    return { events, next: more ? events[events.length - 1].seq : Math.max(since, upTo), more, truncated };
  }

  private async writeQueued(): Promise<void> {
    while (this.pending.length) {
      this.inflight = this.pending;
      this.pending = [];
      this.pendingBytes = 0;
      const data = this.inflight.map((p) => p.line).join('');
      try {
        const handle = await this.currentHandle(data.length);
        await handle.write(data);
        const seg = this.segments[this.segments.length - 1];
        seg.bytes += Buffer.byteLength(data);
        for (const { event } of this.inflight) {
          if (seg.firstSeq === 0) seg.firstSeq = event.seq;
          seg.lastSeq = event.seq;
          seg.runs.add(event.run);
          seg.owners.add(event.owner);
        }
        if (this.failed) {
          this.report(`timeline writes work again (after: ${this.failed})`);
          this.failed = null;
        }
        this.dropped = 0;
      } catch (err) {
        const why = (err as Error).message;
        if (!this.failed) this.report(`timeline could not be written: ${why}; events are kept in memory up to ${TimelineConstants.JournalQueueMaxBytes} bytes`);
        this.failed = why;
        // Keep them for the next try, unless that would pass the bound.
        if (this.pendingBytes + data.length <= TimelineConstants.JournalQueueMaxBytes) {
          this.pending = [...this.inflight, ...this.pending];
          this.pendingBytes += data.length;
        }
        this.inflight = [];
        await this.handle?.close().catch(() => undefined);
        this.handle = null;
        // Try again later, not in a tight loop.
        this.timer ??= setTimeout(() => void this.flush(), TimelineConstants.JournalFlushMs * 20);
        // A retry alone does not keep the process alive.
        this.timer.unref();
        return;
      }
      this.inflight = [];
      this.enforceBound();
    }
  }

  /** The segment to append to, opening a new one when the current would grow past its share. */
  private async currentHandle(incoming: number): Promise<FileHandle> {
    const last = this.segments[this.segments.length - 1];
    if (!last || last.sealed || (last.bytes > 0 && last.bytes + incoming > this.segmentBytes)) {
      await this.handle?.close().catch(() => undefined);
      this.handle = null;
      const name = `${String((last ? Number(SEGMENT_NAME.exec(last.name)![1]) : 0) + 1).padStart(12, '0')}.jsonl`;
      this.segments.push({ name, firstSeq: 0, lastSeq: 0, bytes: 0, runs: new Set(), owners: new Set() });
    }
    const seg = this.segments[this.segments.length - 1];
    if (!this.handle || this.handleName !== seg.name) {
      await this.handle?.close().catch(() => undefined);
      this.handle = await open(join(this.dir, seg.name), 'a', 0o600);
      this.handleName = seg.name;
    }
    return this.handle;
  }

  private enforceBound(): void {
    let total = this.segments.reduce((n, s) => n + s.bytes, 0);
    while (total > this.maxBytes && this.segments.length > 1) {
      const oldest = this.segments.shift()!;
      total -= oldest.bytes;
      this.droppedBelow = Math.max(this.droppedBelow, oldest.lastSeq + 1);
      rmSync(join(this.dir, oldest.name), { force: true });
    }
    // Runs none of whose events are left are forgotten (their recording, if kept, still lists them).
    const firstKept = this.segments[0]?.firstSeq ?? this.seq;
    for (const [run, facts] of this.runs) if (facts.firstSeq < firstKept && !this.segments.some((s) => s.runs.has(run))) this.runs.delete(run);
  }

  private noteRun(e: TimelineEvent): void {
    let facts = this.runs.get(e.run);
    if (!facts) {
      facts = { run: e.run, session: e.session, owner: e.owner, firstSeq: e.seq, startedAt: e.at, endedAt: null, lastAt: e.at };
      this.runs.set(e.run, facts);
    }
    facts.lastAt = e.at;
    if (e.kind === 'closed') facts.endedAt = e.at;
  }

  /** Reads the segments an earlier run left: their seq ranges, which sessions they hold, the last seq. */
  private load(): void {
    const names = readdirSync(this.dir)
      .filter((n) => SEGMENT_NAME.test(n))
      .sort();
    for (const name of names) {
      const path = join(this.dir, name);
      const seg: Segment = { name, firstSeq: 0, lastSeq: 0, bytes: 0, runs: new Set(), owners: new Set() };
      let text = '';
      try {
        seg.bytes = statSync(path).size;
        text = readFileSync(path, 'utf8');
      } catch {
        continue;
      }
      for (const line of text.split('\n')) {
        const e = parseLine(line);
        if (!e) continue;
        if (seg.firstSeq === 0) seg.firstSeq = e.seq;
        seg.lastSeq = Math.max(seg.lastSeq, e.seq);
        seg.runs.add(e.run);
        seg.owners.add(e.owner);
        this.noteRun(e);
        this.seq = Math.max(this.seq, e.seq);
      }
      if (text && !text.endsWith('\n')) seg.sealed = true;
      this.segments.push(seg);
    }
    if (this.segments.length) this.droppedBelow = this.segments[0].firstSeq;
    // A server that stopped without closing its sessions (a crash) left their lives open: they ended then.
    for (const facts of this.runs.values()) facts.endedAt ??= facts.lastAt;
  }

}

function parseLine(line: string): TimelineEvent | null {
  if (!line) return null;
  try {
    const e = JSON.parse(line) as TimelineEvent;
    return typeof e === 'object' && e !== null && typeof e.seq === 'number' && typeof e.run === 'string' && typeof e.owner === 'string' ? e : null;
  } catch {
    // A line cut short by a crash mid-write: skip it.
    return null;
  }
}

