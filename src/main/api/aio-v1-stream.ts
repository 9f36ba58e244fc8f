import type { FastifyReply } from 'fastify';
import { CommandFollower } from '../terminal/command-follower';
import type { CommandRecord, ExecOptions, ExecOutcome } from '../terminal/commands';
import type { Session } from '../terminal/session';
import { SseStream } from './sse';

/**
 * `POST /v1/shell/exec` and `POST /v1/shell/view` with `Accept: text/event-stream` (AIO's OpenAPI: "Supports
 * SSE streaming"). The events are 1.x's, and the last one carries the JSON answer the same request would
 * have had without the header:
 *
 *   : connected
 *   data: {"output": "<lines as a person reads them>"}          (as they become final; repeated)
 *   data: {"keepalive": true}                                     (view only, when quiet; exec sends a comment)
 *   data: {"end": true, "message": "No more output", "result": {success, message, data}}
 *   data: {"error": "<message>"}                                   (instead of the end, if it failed mid-stream)
 *
 * A refusal known before the stream starts (validation, 404, 423, a running command) is the ordinary
 * JSON error with its status, not an event.
 */
type Answer = { success: boolean; message: string; data: unknown };

/** How often a stream waiting on a command rechecks whether its client has gone. */
const ClientCheckMs = 1000;

export async function streamExec(
  reply: FastifyReply,
  session: Session,
  command: string,
  opts: ExecOptions,
  answer: (record: CommandRecord, outcome: ExecOutcome) => Answer,
): Promise<void> {
  const from = session.log.end;
  const running = session.exec(command, opts);
  // A refusal the core makes at once (the floor, a running command) is answered as plain JSON.
  let refused: { err: unknown } | null = null;
  running.catch((err: unknown) => (refused = { err }));
  await new Promise((r) => setImmediate(r));
  if (refused) throw (refused as { err: unknown }).err;

  const sse = new SseStream(reply, { comment: 'keepalive' });
  const follow = following(session, sse, () => execRecordSince(session, from));
  try {
    let { record, outcome } = await running;
    if (outcome === 'async') {
      // 1.x streams an async command until it ends too; only its client leaving stops the stream.
      while (!record.finished && sse.isOpen) await record.until(() => record.finished, ClientCheckMs);
      // Denied while it waited for a person: the stream ends with the denial, as a sync exec answers it.
      if (record.status === 'denied') throw record.denial ?? new Error('Denied');
      outcome = record.status === 'running' ? 'async' : record.status;
    }
    follow.drain();
    sse.data({ end: true, message: 'No more output', result: answer(record, outcome) });
  } catch (err) {
    sse.data({ error: (err as Error).message });
  } finally {
    follow.stop();
    sse.end();
  }
}

export async function streamView(reply: FastifyReply, session: Session, answer: () => Answer): Promise<void> {
  const rec = session.commands.current;
  const sse = new SseStream(reply, { data: { keepalive: true } });
  try {
    if (!rec || rec.finished) {
      // Nothing runs: what a plain view would show, then the end.
      const now = answer();
      const output = (now.data as { output?: string } | null)?.output;
      if (output) sse.data({ output });
    } else {
      const follow = following(session, sse, () => rec);
      while (!rec.finished && sse.isOpen) await rec.until(() => rec.finished, ClientCheckMs);
      follow.drain();
      follow.stop();
    }
    sse.data({ end: true, message: 'No more output', result: answer() });
  } catch (err) {
    sse.data({ error: (err as Error).message });
  } finally {
    sse.end();
  }
}

/**
 * Sends the command's output as `output` events while it arrives: a reader on the session's output
 * path, paused while the client is slow (it resumes from the log, where the bytes still are).
 */
function following(session: Session, sse: SseStream, record: () => CommandRecord | null) {
  let follower: CommandFollower | null = null;
  const pump = (force = false): void => {
    const rec = record();
    if (!rec || !sse.isOpen) return;
    follower ??= new CommandFollower(session.log, rec);
    for (let piece = follower.take(); piece; piece = follower.take()) {
      if (piece.lost) sse.data({ output: `[... ${piece.lost} bytes of output were dropped from the session log before this stream read them ...]\n` });
      if (piece.text) sse.data({ output: piece.text });
      if (sse.congested && !force) return;
    }
  };
  const detach = session.attach({ pump: () => pump() });
  sse.onDrain(() => pump());
  pump();
  return {
    /** Everything left, whatever the client's pace: the stream ends after this. */
    drain: () => pump(true),
    stop: detach,
  };
}

/** The command an exec typed after log offset `from` (not one a person typed meanwhile). */
function execRecordSince(session: Session, from: number): CommandRecord | null {
  for (const rec of [session.commands.current, session.commands.last]) {
    if (rec && rec.source === 'exec' && rec.writeOffset >= from) return rec;
  }
  return null;
}

/** An answer that needed no waiting (strict exec_dir refused), in the stream's events. */
export function sendAsEvents(reply: FastifyReply, result: Answer, output: string | null): FastifyReply {
  const sse = new SseStream(reply, { comment: 'keepalive' });
  if (output) sse.data({ output });
  sse.data({ end: true, message: 'No more output', result });
  sse.end();
  return reply;
}
