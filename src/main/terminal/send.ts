import type { WaitReason } from '../../shared/types';
import type { Actor } from './actor';
import { DeniedError, LineGateConstants } from './line-gate';
import type { Marker } from './marker-scanner';
import { anyTerminalWait, freshTerminalWait, freshWaiters, kernelProbeAvailable, probeForeground, stillInSameWait, type ForegroundState } from './readiness';
import type { Session } from './session';

/**
 * One interactive send (seeds 001/002): type text, then return when the program waits for input
 * (`stdin_read`), goes quiet (`inferred_idle`), runs out of time (`timeout`), or the shell exits
 * (`session_exit`); with the screen delta a person would see (`viewport`).
 *
 * Tiers, checked as soon as the output goes quiet after the write, then on a backoff while nothing happens:
 *   1. session_exit: the shell itself ended (after its last output was delivered).
 *   2. stdin_read (kernel): a thread of the foreground group blocked on the terminal, in a wait that
 *      began after our write (readiness.ts).
 *   3. stdin_read (prompt): the shell drew its prompt after our write and holds the foreground. This is
 *      what remains where /proc cannot tell (macOS).
 *   4. inferred_idle: output came, then nothing for IdleMs (plus PromptGraceMs if a prompt was seen).
 *   5. timeout.
 * A wait found in 2-3 counts once every byte the program wrote before it is in the log (the bytes that
 * led to the wait must be on the screen): the backend drains its terminal (one turn of the loop that
 * reads the PTY, wherever that runs), and no output may have come meanwhile unless the waiting thread
 * stayed blocked in the same wait throughout (then what came was written before it). No wait counts
 * before the backend says the terminal has taken our input (pendingInputBytes 0): until then the program
 * may be blocked in a read our bytes have not reached (the write queued, or on its way through the PTY
 * host), and output since the write may be the end of what it printed before (a prompt still being
 * drawn). The fast path also needs output since the write. Without it, or with a backend that cannot
 * drain (tmux), the wait must show on two looks SecondLookMs apart with nothing new between them.
 *
 * A send that types nothing (empty text, no Enter) only watches: there is no write for a wait to be newer
 * than, so a wait that already exists counts (a program blocked reading, or the shell at its prompt), and
 * the answer comes at once.
 *
 * While the line waits for a person's decision (line-gate.ts) no tier is looked at and no clock runs;
 * a refused line answers DeniedError once the prompt is back.
 */
export const SendConstants = {
  /**
   * Output must have been quiet this long before the kernel is asked (0: one turn of the event loop,
   * whose poll phase would have read more output if there were any): a program still printing is not
   * waiting, and asking costs a few /proc reads.
   */
  QuietMs: 0,
  /** Output that goes on through that first turn is looked at again this often until it stops (no busy loop). */
  QuietRetryMs: 2,
  /** With no output, the kernel is asked after FirstProbeMs, then at doubling intervals up to PollMs. */
  FirstProbeMs: 1,
  PollMs: 50,
  /** Where the fast path does not apply: a wait must hold on two looks this far apart. */
  SecondLookMs: 10,
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

/** The shell's own life, not a program's: `alive` says nothing about whether a program runs in it. */
export type SessionStatus = { kind: 'shell_alive' } | { kind: 'shell_exited'; exitCode: number | null; signal: number | null };

export interface SendResult {
  viewport: string;
  waitReason: WaitReason;
  sessionStatus: SessionStatus;
  /** No program runs: the shell itself waits at its prompt for a command. */
  atShellPrompt: boolean;
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
  if (session.exit) return { kind: 'shell_exited', exitCode: session.exit.exitCode, signal: session.exit.signal };
  if (session.closed) return { kind: 'shell_exited', exitCode: null, signal: null };
  return { kind: 'shell_alive' };
}

export async function runSend(session: Session, opts: SendOptions): Promise<SendResult> {
  const timeoutMs = Math.min(opts.timeoutMs ?? SendConstants.TimeoutMs, SendConstants.MaxTimeoutMs);
  const idleMs = opts.idleMs ?? SendConstants.IdleMs;
  if (!session.started) session.start();
  await session.ready();
  session.authorize(opts.writer, 'send');
  if (opts.submit) await session.checkLineAtDoor(opts.text, opts.writer);

  const marker = await session.screen.markCursor();
  const pid = session.pid;
  const kernel = kernelProbeAvailable && pid !== null && session.mode === 'pty';
  // Only who is in the foreground and how often each thread has blocked: a wait counts if it began after this.
  const baseline = kernel ? probeForeground(pid!, { waits: false }) : null;
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
  let denial: DeniedError | null = null;
  const offGate = session.events.on('gate', (e) => {
    if (e.state === 'decided' && !e.allowed) denial ??= new DeniedError(e.message, e.reason);
  });
  const heldAtStart = session.heldMs();
  const started = Date.now();
  const watchOnly = opts.text === '' && !opts.submit;
  // Woken by each batch of output, so the kernel is asked as soon as the output goes quiet.
  let wake: (() => void) | null = null;
  let outputArrived = false;
  const watcher = {
    pump: () => {
      outputArrived = true;
      // The viewport is parsed while the kernel is asked and the terminal drained, not after.
      void session.screen.catchUp();
      wake?.();
    },
  };
  session.hub.attach(watcher);
  const pause = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        wake = null;
        resolve();
      };
      if (ms <= 0) {
        setImmediate(done);
        return;
      }
      const timer = setTimeout(done, ms);
      wake = () => {
        clearTimeout(timer);
        done();
      };
    });
  /** Quiet is counted from the later of the write and the end of the last wait for a decision. */
  let quietFrom = started;
  /** Time spent waiting for a person's decision does not count against the send's timeout. */
  const elapsed = (): number => Date.now() - started - (session.heldMs() - heldAtStart);
  let deniedAt = 0;
  try {
    if (!watchOnly) session.write(opts.text + (opts.submit ? '\r' : ''), opts.writer, opts.submit);
    /** What the kernel said at the last look. */
    const last: { look: ForegroundState | null } = { look: null };
    const look = (): ForegroundState | null => (last.look = kernel ? probeForeground(pid!) : null);
    // A wait counts only once the terminal has taken our input: before that, the program may be blocked
    // in a read our bytes have not reached yet (the write is queued, or on its way through the PTY host),
    // and output since the write may still be the end of what it printed before (its prompt).
    const inputTaken = (): boolean => watchOnly || (session.pendingInputBytes ?? 0) === 0;
    const waiting = (): boolean =>
      watchOnly
        ? anyTerminalWait(look()) || shellAtPrompt(session, kernel)
        : inputTaken() && (freshTerminalWait(baseline, look()) || (promptSeen && shellHoldsForeground(session, kernel)));
    let reason: WaitReason | null = null;
    let backoff: number = SendConstants.FirstProbeMs;
    let quieting = 0;
    // Off the fast path: where the log ended, and when, when a wait was first seen (it must hold).
    let waitSeen: { end: number; at: number } | null = null;
    while (!reason) {
      outputArrived = false;
      await pause(quieting === 0 ? backoff : quieting === 1 ? SendConstants.QuietMs : SendConstants.QuietRetryMs);
      const now = Date.now();
      if (session.held) {
        // A person is deciding: no tier is looked at, and no clock runs.
        quietFrom = now;
        waitSeen = null;
        quieting = 0;
        backoff = SendConstants.PollMs;
        continue;
      }
      if (denial) {
        // It never ran: answer once the prompt is back (or after a grace), so the next call finds it ready.
        deniedAt ||= now;
        if (promptSeen || session.exit || session.closed || now - deniedAt >= LineGateConstants.PromptAfterDenialMs) throw denial;
        quieting = 0;
        continue;
      }
      if (outputArrived) {
        // Output: wait for it to go quiet, then look at once.
        quieting++;
        backoff = SendConstants.FirstProbeMs;
        if (elapsed() < timeoutMs && !session.exit && !session.closed) continue;
      } else if (quieting === 0) backoff = Math.min(backoff * 2, SendConstants.PollMs);
      quieting = 0;
      const quietFor = now - Math.max(session.lastOutputAt, quietFrom);
      const outputSinceWrite = session.log.end > writeOffset;
      if (session.exit || session.closed) reason = 'session_exit';
      else if (waiting()) {
        if (session.canDrain && outputSinceWrite) {
          // Every byte written before the wait must be in: drain the terminal. Output that came meanwhile
          // was written before the wait if the waiting thread never woke (its switch count held).
          const end = session.log.end;
          const waiters = watchOnly ? [] : freshWaiters(baseline, last.look);
          const pgid = last.look?.pgid ?? 0;
          await session.drainOutput();
          if (stillInSameWait(pid!, pgid, waiters) || (session.log.end === end && waiting())) reason = 'stdin_read';
        } else if (waitSeen && waitSeen.end === session.log.end) {
          if (Date.now() - waitSeen.at >= SendConstants.SecondLookMs) reason = 'stdin_read';
        } else waitSeen = { end: session.log.end, at: Date.now() };
      } else {
        waitSeen = null;
        if (outputSinceWrite && quietFor >= idleMs + (promptSeen ? SendConstants.PromptGraceMs : 0)) reason = 'inferred_idle';
        else if (elapsed() >= timeoutMs) reason = 'timeout';
      }
      if (!reason && elapsed() >= timeoutMs) reason = 'timeout';
    }
    const view = await session.screen.viewportSince(marker, SendConstants.MaxViewportBytes);
    return {
      viewport: view.text,
      waitReason: reason,
      sessionStatus: sessionStatusOf(session),
      atShellPrompt: session.isAlive && shellAtPrompt(session, kernel),
      truncated: view.truncated,
      detector: kernel ? 'kernel' : 'markers+silence',
    };
  } finally {
    session.hub.detach(watcher);
    offMarker();
    offGate();
    marker?.dispose();
  }
}

function shellHoldsForeground(session: Session, kernel: boolean): boolean {
  if (!kernel) return true;
  const fg = probeForeground(session.pid!);
  return fg !== null && fg.pgid === fg.shellPgid;
}

/** The shell drew its prompt and nothing has started since (and, where the kernel tells, it holds the terminal). */
function shellAtPrompt(session: Session, kernel: boolean): boolean {
  return session.shellState === 'prompt' && shellHoldsForeground(session, kernel);
}
