import { OutputChannel } from '../../../shared/types';
import type { OutputLog } from '../output-log';

/**
 * stdout and stderr as two byte streams with offsets of their own, kept inside the session's one output
 * log (which tags each byte range with its channel). The bash API counts `offset` over stdout alone and
 * `stderr_offset` over stderr alone; the log counts both together. This index maps one onto the other
 * without a second copy of the bytes, so a pipe session costs what any session costs.
 *
 * A run is a stretch of one stream that lies contiguous in the log. Runs whose bytes the log has
 * dropped are forgotten; a reader asking for such bytes gets the oldest ones still held.
 */
export const Stream = { Stdout: OutputChannel.Stdout, Stderr: OutputChannel.Stderr } as const;
export type StreamChannel = (typeof Stream)[keyof typeof Stream];

interface Run {
  /** Where the run starts in the log. */
  log: number;
  /** Where it starts in its stream. */
  stream: number;
  len: number;
}

export class StreamIndex {
  private readonly runs: Record<StreamChannel, Run[]> = { 1: [], 2: [] };
  private readonly ends: Record<StreamChannel, number> = { 1: 0, 2: 0 };

  constructor(private readonly log: OutputLog) {}

  /** Bytes ever written to `channel` (the next byte's stream offset). */
  end(channel: StreamChannel): number {
    return this.ends[channel];
  }

  /** The oldest stream offset whose byte the log still holds. */
  start(channel: StreamChannel): number {
    this.forgetDropped(channel);
    const first = this.runs[channel][0];
    if (!first) return this.ends[channel];
    return first.stream + Math.max(0, this.log.start - first.log);
  }

  /** `len` bytes of `channel` were appended to the log at `logOffset`. Call it before they land. */
  note(channel: StreamChannel, logOffset: number, len: number): void {
    if (len <= 0) return;
    const runs = this.runs[channel];
    const last = runs[runs.length - 1];
    if (last && last.log + last.len === logOffset) last.len += len;
    else runs.push({ log: logOffset, stream: this.ends[channel], len });
    this.ends[channel] += len;
    this.forgetDropped(channel);
  }

  /**
   * The stream's bytes from `from` to its end (or to `to`), clamped to what the log still holds: a stale
   * offset reads from the oldest byte kept. Returns the bytes and the offset they really start at.
   */
  read(channel: StreamChannel, from: number, to: number = this.ends[channel]): { data: Buffer; from: number } {
    const lo = Math.max(from, this.start(channel));
    const hi = Math.min(to, this.ends[channel]);
    if (hi <= lo) return { data: Buffer.alloc(0), from: Math.min(lo, this.ends[channel]) };
    const runs = this.runs[channel];
    const parts: Buffer[] = [];
    for (let i = this.runAt(channel, lo); i < runs.length; i++) {
      const r = runs[i];
      if (r.stream >= hi) break;
      const a = Math.max(lo, r.stream) - r.stream;
      const b = Math.min(hi, r.stream + r.len) - r.stream;
      parts.push(this.log.read(r.log + a, r.log + b));
    }
    return { data: parts.length === 1 ? parts[0] : Buffer.concat(parts), from: lo };
  }

  /** Index of the run holding stream offset `offset` (binary search: a long session has many runs). */
  private runAt(channel: StreamChannel, offset: number): number {
    const runs = this.runs[channel];
    let lo = 0;
    let hi = runs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (runs[mid].stream <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private forgetDropped(channel: StreamChannel): void {
    const runs = this.runs[channel];
    let drop = 0;
    while (drop < runs.length && runs[drop].log + runs[drop].len <= this.log.start) drop++;
    if (drop) runs.splice(0, drop);
  }
}
