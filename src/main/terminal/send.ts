import type { WaitReason } from '../../shared/types';
import type { Actor } from './actor';
import type { Marker } from './marker-scanner';
import { freshTerminalWait, kernelProbeAvailable, probeForeground } from './readiness';
import type { Session } from './session';

/**
 * One interactive send (seeds 001/002): type text, then return when the program waits for input
 * (`stdin_read`), goes quiet (`inferred_idle`), runs out of time (`timeout`), or the shell exits
 * (`session_exit`); with the screen delta a person would see (`viewport`).
 *
 * Tiers, checked every FastPollMs at first, then every PollMs:
 *   1. session_exit: the shell itself ended (after its last output was delivered).
 *   2. stdin_read (kernel): a thread of the foreground group blocked on the terminal, in a wait that
 *      began after our write (readiness.ts).
 *   3. stdin_read (prompt): the shell drew its prompt after our write and holds the foreground. This is
 *      what remains where /proc cannot tell (macOS).
 *   4. inferred_idle: output came, then nothing for IdleMs (plus PromptGraceMs if a prompt was seen).
 *   5. timeout.
 * Each of 2-3 also needs QuietMs of quiet and must hold on two polls in a row, so the bytes that led to
 * the wait are on the screen.
 */
export const SendConstants = {
  /** Polls come fast at first (most programs answer within a few tens of ms), then settle to PollMs. */
  FastPollMs: 10,
  FastPollForMs: 500,
  PollMs: 50,
  /** Quiet needed before a wait counts (with the second look one poll later, see runSend). */
  QuietMs: 20,
  /** default: quiet period after which a program that is not reading is reported idle. */
  IdleMs: 3000,
  PromptGraceMs: 500,
  /** default: how long a send waits at most. */
  TimeoutMs: 30000,
  MaxTimeoutMs: 600_000,
  /** The viewport returned is capped at this many bytes (the newest lines are kept). */
  MaxViewportBytes: 64 * 1024,
} as const;

export interface SendOptions {
  text: string;
  submit: boolean;
  timeoutMs?: number;
  idleMs?: number;
  writer: Actor;
}

export type SessionStatus = { kind: 'running' } | { kind: 'exited'; exitCode: number | null; signal: number | null };

export interface SendResult {
  viewport: string;
  waitReason: WaitReason;
  sessionStatus: SessionStatus;
  truncated: boolean;
  /** Which evidence was available: the kernel's, or only prompt markers and silence. */
  detector: 'kernel' | 'markers+silence';
}

export class SendActiveError extends Error {
  constructor() {
    super('A send is already in progress on this session: wait for it to return (one send at a time per session)');
    this.name = 'SendActiveError';
  }
}

export function sessionStatusOf(session: Session): SessionStatus {
  if (session.exit) return { kind: 'exited', exitCode: session.exit.exitCode, signal: session.exit.signal };
  if (session.closed) return { kind: 'exited', exitCode: null, signal: null };
  return { kind: 'running' };
}

export async function runSend(session: Session, opts: SendOptions): Promise<SendResult> {
  const timeoutMs = Math.min(opts.timeoutMs ?? SendConstants.TimeoutMs, SendConstants.MaxTimeoutMs);
  const idleMs = opts.idleMs ?? SendConstants.IdleMs;
  if (!session.started) session.start();
  await session.ready();
  session.authorize(opts.writer, 'send');

  const marker = await session.screen.markCursor();
  const pid = session.pid;
  const kernel = kernelProbeAvailable && pid !== null && session.mode === 'pty';
  const baseline = kernel ? probeForeground(pid!) : null;
  const writeOffset = session.log.end;
  // A prompt counts only as the end of a prompt cycle that began after the write (D, then B): a prompt
  // that was still being drawn when the text went in is not an answer to it.
  let cycleEnded = false;
  let promptSeen = false;
  const offMarker = session.events.on('marker', (m: Marker) => {
    if (m.start < writeOffset) return;
    if (m.kind === 'D') cycleEnded = true;
    else if (m.kind === 'B' && cycleEnded) promptSeen = true;
  });
  const started = Date.now();
  try {
    session.write(opts.text + (opts.submit ? '\r' : ''), opts.writer);
    let reason: WaitReason | null = null;
    // A wait must be seen on two polls in a row with no output between them: a program may have printed
    // its last bytes and blocked before this process read them from the PTY (a timer can run before the
    // I/O that is already pending), and the second look happens after that I/O.
    let waitSeenAtLogEnd: number | null = null;
    while (!reason) {
      const elapsed = Date.now() - started;
      await new Promise((r) => setTimeout(r, elapsed < SendConstants.FastPollForMs ? SendConstants.FastPollMs : SendConstants.PollMs));
      const now = Date.now();
      const quietFor = now - Math.max(session.lastOutputAt, started);
      const outputSinceWrite = session.log.end > writeOffset;
      const waiting =
        quietFor >= SendConstants.QuietMs &&
        ((kernel && freshTerminalWait(baseline, probeForeground(pid!))) || (promptSeen && shellHoldsForeground(session, kernel)));
      if (session.exit || session.closed) reason = 'session_exit';
      else if (waiting && waitSeenAtLogEnd === session.log.end) reason = 'stdin_read';
      else if (outputSinceWrite && quietFor >= idleMs + (promptSeen ? SendConstants.PromptGraceMs : 0)) reason = 'inferred_idle';
      else if (now - started >= timeoutMs) reason = 'timeout';
      waitSeenAtLogEnd = waiting ? session.log.end : null;
    }
    const view = await session.screen.viewportSince(marker, SendConstants.MaxViewportBytes);
    return {
      viewport: view.text,
      waitReason: reason,
      sessionStatus: sessionStatusOf(session),
      truncated: view.truncated,
      detector: kernel ? 'kernel' : 'markers+silence',
    };
  } finally {
    offMarker();
    marker?.dispose();
  }
}

function shellHoldsForeground(session: Session, kernel: boolean): boolean {
  if (!kernel) return true;
  const fg = probeForeground(session.pid!);
  return fg !== null && fg.pgid === fg.shellPgid;
}
