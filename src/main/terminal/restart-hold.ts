import { StreamConstants } from './constants';
import type { OutputReader } from './output-hub';
import type { OutputLog } from './output-log';

/**
 * A terminal taken back after a restart: the clients of the server that died reconnect on their own
 * time, each resuming from the offset it had reached, which may be anywhere in what the log held when
 * the terminal was taken back. Until one of them is back (or RestartHoldMs has passed), this stands in
 * for them as a reader that has read nothing since, so the terminal is held back as it was for them;
 * otherwise a flood runs on through the log, past their offsets, in the moments before they return.
 */
export class RestartHold implements OutputReader {
  private readonly until: number;

  constructor(
    private readonly log: OutputLog,
    /** The oldest offset a returning client can resume from: the log's start when it was taken back. */
    private readonly from: number,
    now: number = Date.now(),
  ) {
    this.until = now + StreamConstants.RestartHoldMs;
  }

  pump(): void {
    // It reads nothing: it only holds the terminal back.
  }

  throttleLag(now: number): number {
    return now < this.until ? this.log.end - this.from : 0;
  }

  keepsFrom(now: number): number {
    return now < this.until ? this.from : Infinity;
  }
}
