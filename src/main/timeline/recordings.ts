import { closeSync, mkdirSync, openSync, readdirSync, readSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CastHeader, RecordingInfo } from '../../shared/timeline';
import { RecordingWriter } from './recording-writer';
import type { TimelineSettings } from './settings';

/** A recording's key: when it began (base 36 ms) and a random tag. Safe as a file name and a URL segment. */
export const RECORDING_KEY = /^[0-9a-z]{6,12}-[0-9a-f]{6}$/;

const RecordsExt = '.ptyrec';
const CastExt = '.cast';

/** The most of a file read to find its header line. */
const HeaderReadBytes = 16 * 1024;

interface Kept {
  key: string;
  session: string;
  owner: string;
  startedAt: string;
  cols: number;
  rows: number;
  /** Its file: `<key>.ptyrec` (records), or `<key>.cast` as servers before 1 Dec 2026 wrote them. */
  file: string;
  /** Set while its session is live. */
  writer: RecordingWriter | null;
  endedAt: string | null;
  stopped: string | null;
}

/**
 * The recordings in `<home>/recordings/`: one `<key>.ptyrec` per life of a session (recording-file.ts;
 * served as asciicast v2), kept after it closes until deleted, aged out (closed ones older than
 * recordingMaxAgeDays), or dropped to stay under the total cap (the oldest closed ones first). Files are
 * 0600. Asciicast files an earlier version wrote (`<key>.cast`) are kept and served as they are.
 */
export class RecordingStore {
  private readonly kept = new Map<string, Kept>();
  private total = 0;

  constructor(
    readonly dir: string,
    private readonly settings: TimelineSettings,
    private readonly report: (problem: string) => void,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.load();
    this.ageOut();
  }

  /** Starts recording a session's life; `onStop` hears when output stops being recorded. */
  open(header: CastHeader & { ptydeck: NonNullable<CastHeader['ptydeck']> }, onStop: (why: string) => void): RecordingWriter | null {
    const key = header.ptydeck.run;
    const kept = keptFrom(key, `${key}${RecordsExt}`, header, null);
    this.kept.set(key, kept);
    kept.writer = new RecordingWriter(join(this.dir, kept.file), header, { maxBytes: this.settings.recordingMaxBytes, reserve: (n) => this.reserve(n, key) }, (why) => {
      kept.stopped = why;
      onStop(why);
    });
    return kept.writer;
  }

  /** The session's life ended: its recording is finished and kept. */
  async finish(key: string): Promise<void> {
    const kept = this.kept.get(key);
    if (!kept?.writer) return;
    const writer = kept.writer;
    await writer.close();
    // The total counted estimates while it was written; from now on it counts the file.
    this.total = Math.max(0, this.total + this.sizeOf(kept) - writer.bytes);
    kept.writer = null;
    kept.endedAt = new Date().toISOString();
  }

  get(key: string): RecordingInfo | null {
    const k = this.kept.get(key);
    return k ? this.info(k) : null;
  }

  list(): RecordingInfo[] {
    return [...this.kept.values()].map((k) => this.info(k)).sort((a, b) => (a.startedAt < b.startedAt ? 1 : a.startedAt > b.startedAt ? -1 : 0));
  }

  /** The newest recording of a session id, live or not. */
  latestOf(sessionId: string): RecordingInfo | null {
    return this.list().find((r) => r.session === sessionId) ?? null;
  }

  /**
   * The file to serve, with everything queued written first; `size` is where whole records (or lines)
   * end; `records`: it holds records (castStream turns them into asciicast), else it is asciicast.
   */
  async readable(key: string): Promise<{ path: string; size: number; records: boolean } | null> {
    const k = this.kept.get(key);
    if (!k) return null;
    await k.writer?.flush();
    const path = join(this.dir, k.file);
    try {
      return { path, size: statSync(path).size, records: k.file.endsWith(RecordsExt) };
    } catch {
      return null;
    }
  }

  /** Deletes a closed session's recording. A live one is refused (it is still being written). */
  delete(key: string): 'deleted' | 'live' | 'missing' {
    const k = this.kept.get(key);
    if (!k) return 'missing';
    if (k.writer) return 'live';
    this.remove(k);
    return 'deleted';
  }

  /** Closed recordings older than the age setting are deleted. */
  ageOut(now = Date.now()): void {
    if (this.settings.recordingMaxAgeDays === 0) return;
    const limit = now - this.settings.recordingMaxAgeDays * 86400_000;
    for (const k of [...this.kept.values()]) {
      if (k.writer) continue;
      const ended = Date.parse(k.endedAt ?? k.startedAt);
      if (ended < limit) this.remove(k);
    }
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.kept.values()].filter((k) => k.writer).map((k) => this.finish(k.key)));
  }

  private info(k: Kept): RecordingInfo {
    return {
      key: k.key,
      session: k.session,
      owner: k.owner,
      startedAt: k.startedAt,
      endedAt: k.endedAt,
      live: k.writer !== null,
      bytes: k.writer ? k.writer.bytes : this.sizeOf(k),
      cols: k.cols,
      rows: k.rows,
      stopped: k.stopped,
    };
  }

  /** Room for `n` more bytes under the total cap, deleting the oldest closed recordings if need be. */
  private reserve(n: number, forKey: string): boolean {
    if (this.total + n > this.settings.recordingsTotalBytes) {
      const closed = [...this.kept.values()].filter((k) => !k.writer && k.key !== forKey).sort((a, b) => (a.startedAt < b.startedAt ? -1 : 1));
      for (const k of closed) {
        if (this.total + n <= this.settings.recordingsTotalBytes) break;
        this.report(`deleted the recording ${k.key} (session ${k.session}) to stay under the total cap of ${this.settings.recordingsTotalBytes} bytes`);
        this.remove(k);
      }
      if (this.total + n > this.settings.recordingsTotalBytes) return false;
    }
    this.total += n;
    return true;
  }

  private remove(k: Kept): void {
    this.total = Math.max(0, this.total - this.sizeOf(k));
    rmSync(join(this.dir, k.file), { force: true });
    this.kept.delete(k.key);
  }

  private sizeOf(k: Kept): number {
    try {
      return statSync(join(this.dir, k.file)).size;
    } catch {
      return 0;
    }
  }

  /** Recordings an earlier server left: their headers say whose they are; all of them are closed now. */
  private load(): void {
    for (const name of readdirSync(this.dir)) {
      const ext = [RecordsExt, CastExt].find((e) => name.endsWith(e));
      const key = ext ? name.slice(0, -ext.length) : '';
      if (!RECORDING_KEY.test(key) || this.kept.has(key)) continue;
      const path = join(this.dir, name);
      const header = readHeader(path);
      if (!header?.ptydeck) continue;
      let st;
      try {
        st = statSync(path);
      } catch {
        continue;
      }
      this.total += st.size;
      // The last write is when it ended: closed, or the server stopped.
      this.kept.set(key, keptFrom(key, name, header as CastHeader & { ptydeck: NonNullable<CastHeader['ptydeck']> }, st.mtime.toISOString()));
    }
  }
}

/** What is known of a recording from its header: a live one (endedAt null) or one found on disk. */
function keptFrom(key: string, file: string, header: CastHeader & { ptydeck: NonNullable<CastHeader['ptydeck']> }, endedAt: string | null): Kept {
  return {
    key,
    file,
    session: header.ptydeck.session,
    owner: header.ptydeck.owner,
    startedAt: new Date(header.timestamp * 1000).toISOString(),
    cols: header.width,
    rows: header.height,
    writer: null,
    endedAt,
    stopped: null,
  };
}

function readHeader(path: string): CastHeader | null {
  let fd: number | null = null;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.alloc(HeaderReadBytes);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.toString('utf8', 0, n);
    const nl = text.indexOf('\n');
    const h = JSON.parse(nl >= 0 ? text.slice(0, nl) : text) as CastHeader;
    const p = h.ptydeck;
    if (h.version !== 2 || !p || typeof p.session !== 'string' || typeof p.owner !== 'string' || typeof h.timestamp !== 'number') return null;
    return h;
  } catch {
    return null;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
