/**
 * Who may type into a session. A person watching a session chooses one of three modes:
 *   watch    — read only; the agent types alone (the default for a session an agent owns)
 *   type     — the person's keys go in beside the agent's
 *   takeover — the person holds the floor; agents' input and exec are refused until release
 * Writes are never interleaved inside one write: each is a single call on the backend, in arrival order.
 */
export type FloorMode = 'watch' | 'type' | 'takeover';
export type Writer = 'agent' | 'person' | 'system';
export type Controller = 'agent' | 'person';

export class FloorRefusedError extends Error {
  constructor(readonly writer: Writer) {
    super(
      writer === 'agent'
        ? 'A person has taken control of this session: agent input and exec are refused until they release it (reads still work)'
        : 'This session is in watch mode: switch to type or take over to send keys',
    );
    this.name = 'FloorRefusedError';
  }
}

export class Floor {
  constructor(private current: FloorMode) {}

  get mode(): FloorMode {
    return this.current;
  }

  get controller(): Controller {
    return this.current === 'takeover' ? 'person' : 'agent';
  }

  set(mode: FloorMode): boolean {
    if (mode === this.current) return false;
    this.current = mode;
    return true;
  }

  /** Throws FloorRefusedError when `writer` may not type now. The server's own keys (^C on a timeout) always go. */
  check(writer: Writer): void {
    if (writer === 'system') return;
    if (writer === 'agent' && this.current === 'takeover') throw new FloorRefusedError(writer);
    if (writer === 'person' && this.current === 'watch') throw new FloorRefusedError(writer);
  }
}
