import { crc32 } from 'node:zlib';
import type { Payload } from './payload';
import { nowMs } from './stats';

/**
 * Follows one byte stream (whatever a door or node-pty delivers) and checks the payload in it: finds
 * the BEGIN marker, counts and CRCs every byte up to the END marker, and notes when each was seen.
 * The clock runs from BEGIN to END, so a figure is the rate of the stream itself, not of starting a
 * command. CRC-32 (zlib's, native) is cheap enough not to be what limits the client.
 */
export interface CheckResult {
  ok: boolean;
  bytes: number;
  expectedBytes: number;
  /** Milliseconds from BEGIN to END as the client saw them. */
  ms: number;
  mibPerSec: number;
  /** Why the door says it dropped bytes (a gap frame, a resync), if it said so. */
  lossSignals: string[];
  /** Frames (door messages, or node-pty reads) that carried payload bytes: bytes ÷ frames is the average frame. */
  frames: number;
  /** Set when the stream never completed. */
  error?: string;
}

export class StreamCheck {
  private state: 'seeking' | 'reading' | 'done' = 'seeking';
  private carry: Buffer = Buffer.alloc(0);
  private bytes = 0;
  private frames = 0;
  private crc = 0;
  private beganAt = 0;
  private endedAt = 0;
  private readonly lossSignals: string[] = [];
  private resolveDone!: () => void;
  private failure: string | null = null;
  /** Resolves once END has been seen (or the check failed). */
  readonly done: Promise<void>;

  constructor(private readonly payload: Payload) {
    this.done = new Promise((r) => (this.resolveDone = r));
  }

  get finished(): boolean {
    return this.state === 'done';
  }

  get beganAtMs(): number {
    return this.beganAt;
  }

  get endedAtMs(): number {
    return this.endedAt;
  }

  /** True once BEGIN has been seen (the command's output has started). */
  get started(): boolean {
    return this.state !== 'seeking';
  }

  feed(chunk: Buffer): void {
    if (this.state === 'done' || chunk.length === 0) return;
    if (this.state === 'seeking') {
      const joined = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
      const at = joined.indexOf(this.payload.begin);
      if (at < 0) {
        this.carry = Buffer.from(joined.subarray(Math.max(0, joined.length - this.payload.begin.length + 1)));
        return;
      }
      this.beganAt = nowMs();
      this.state = 'reading';
      this.carry = Buffer.alloc(0);
      chunk = joined.subarray(at + this.payload.begin.length);
      if (chunk.length === 0) return;
    }
    // Reading: hold back the last END.length-1 bytes, which might be the start of END.
    this.frames++;
    const joined = this.carry.length ? Buffer.concat([this.carry, chunk]) : chunk;
    const at = joined.indexOf(this.payload.end);
    if (at >= 0) {
      this.take(joined.subarray(0, at));
      this.endedAt = nowMs();
      this.state = 'done';
      this.carry = Buffer.alloc(0);
      this.resolveDone();
      return;
    }
    const keep = Math.min(joined.length, this.payload.end.length - 1);
    this.take(joined.subarray(0, joined.length - keep));
    this.carry = Buffer.from(joined.subarray(joined.length - keep));
  }

  /** A door said it dropped bytes for this client (gap, resync): the run cannot be exact. */
  noteLoss(reason: string): void {
    this.lossSignals.push(reason);
  }

  fail(reason: string): void {
    if (this.state === 'done') return;
    this.failure = reason;
    this.state = 'done';
    this.resolveDone();
  }

  result(): CheckResult {
    const ms = this.endedAt > this.beganAt ? this.endedAt - this.beganAt : Number.NaN;
    const ok = this.failure === null && this.bytes === this.payload.expectedBytes && this.crc === this.payload.expectedCrc && this.lossSignals.length === 0;
    return {
      ok,
      bytes: this.bytes,
      expectedBytes: this.payload.expectedBytes,
      ms,
      mibPerSec: this.bytes / (1024 * 1024) / (ms / 1000),
      lossSignals: [...this.lossSignals],
      frames: this.frames,
      error: this.failure ?? undefined,
    };
  }

  private take(b: Buffer): void {
    if (b.length === 0) return;
    this.bytes += b.length;
    this.crc = crc32(b, this.crc);
  }
}

/** Waits for a check to finish, failing it after `ms`. */
export async function finishWithin(check: StreamCheck, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | null = null;
  await Promise.race([
    check.done,
    new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        check.fail(`${what}: the stream did not end within ${Math.round(ms / 1000)} s`);
        resolve();
      }, ms);
    }),
  ]);
  if (timer) clearTimeout(timer);
}

/** A human-readable reason a check failed, for the table. */
export function describeFailure(r: CheckResult): string {
  if (r.error) return r.error;
  const parts: string[] = [];
  if (r.bytes !== r.expectedBytes) parts.push(`got ${r.bytes} of ${r.expectedBytes} bytes`);
  else parts.push('checksum mismatch');
  if (r.lossSignals.length) parts.push(`door reported: ${r.lossSignals[0]}${r.lossSignals.length > 1 ? ` (+${r.lossSignals.length - 1} more)` : ''}`);
  return parts.join('; ');
}
