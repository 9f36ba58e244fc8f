/**
 * Whether a viewer keeps up with its session, judged by how fast it acknowledges what it is sent.
 *
 * A viewer behind by more than `resyncBytes` is repainted from a snapshot only if, at the pace it has
 * shown, catching up would take longer than `resyncAfterMs`. A program printing at full speed puts even a
 * viewer that parses instantly megabytes behind for a window's round trip; resyncing it then would only
 * cost the server a parse of the log, over and over. A viewer that has sat on its window without acking
 * (a hidden tab, a slow machine) shows a low pace and is repainted.
 *
 * It also keeps the count of bytes in flight (sent, not yet acked), which the door's window is measured in.
 *
 * The pace is measured over the current busy spell: from the first frame sent to a viewer that was
 * caught up (nothing in flight, nothing more in the log), the bytes it acked divided by the time since.
 * An idle viewer's quiet time never counts against it; a viewer that acks its whole window at once after
 * sitting on it is still in the same spell.
 */
export class ViewerPace {
  private inFlight = 0;
  private busySince: number | null = null;
  private ackedInSpell = 0;
  /** The last frame sent reached the end of the log. */
  private reachedEnd = true;

  constructor(
    private readonly resyncBytes: number,
    private readonly resyncAfterMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Sent and not yet acknowledged. */
  get inFlightBytes(): number {
    return this.inFlight;
  }

  /** A frame went out; `backlog` is what the log holds beyond it. */
  sent(bytes: number, backlog: number): void {
    if (this.inFlight === 0 && this.reachedEnd && bytes > 0) {
      this.busySince = this.now();
      this.ackedInSpell = 0;
    }
    this.inFlight += bytes;
    this.reachedEnd = backlog === 0;
  }

  /** The viewer acknowledged this many bytes (more than are in flight counts as all of them). */
  acked(bytes: number): void {
    const n = Math.min(bytes, this.inFlight);
    this.inFlight -= n;
    this.ackedInSpell += n;
  }

  /** A new epoch (a snapshot): nothing is in flight. */
  reset(): void {
    this.inFlight = 0;
    this.busySince = null;
    this.ackedInSpell = 0;
    this.reachedEnd = true;
  }

  /** Should a viewer `backlog` bytes behind the log be repainted instead of fed? */
  shouldResync(backlog: number): boolean {
    if (backlog <= this.resyncBytes) return false;
    if (this.busySince === null) return false;
    const elapsed = this.now() - this.busySince;
    // Too early in a spell to know its pace: decide on the next frame.
    if (elapsed < MinSpellMs) return false;
    const bytesPerMs = this.ackedInSpell / elapsed;
    return bytesPerMs <= 0 || backlog / bytesPerMs > this.resyncAfterMs;
  }
}

const MinSpellMs = 20;
