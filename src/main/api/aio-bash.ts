import { statSync } from 'node:fs';
import { z } from 'zod';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SESSION_ID_PATTERN, InvalidRequestError } from '../terminal/manager';
import { Stream, type StreamChannel } from '../terminal/pipe-commands/stream-index';
import type { CommandHost, PipeCommand } from '../terminal/pipe-commands/command-host';
import { admitCommand, bashBinary, bashSessionHost, commandHostOf, readSnapshot } from '../terminal/pipe-commands/bash-session';
import type { Session } from '../terminal/session';
import { incompleteTailLength } from '../terminal/utf8';
import { checkInputSize, checkedDir, envelope, failure } from './aio-common';
import { actorOf } from './auth';
import { ApiError } from './errors';
import type { ApiContext, Door } from './server';
import { bodyObject, optSeconds, parse, path } from './validate';

/**
 * AIO Sandbox's bash command API (`/v1/bash/*`): commands without a terminal, stdout and stderr apart,
 * read by byte offset. Shapes from AIO's OpenAPI file and SDK (reference/aio-bash-api.md); the choices
 * where its sources disagree are in docs/API.md.
 *
 *   POST /v1/bash/exec                       {command, session_id?, exec_dir?, env?, async_mode?, timeout?,
 *                                             hard_timeout?, max_output_length?}  -> BashExecResult
 *   POST /v1/bash/output                     {session_id, command_id?, offset?, stderr_offset?, wait?,
 *                                             wait_timeout?}                      -> BashOutputResult
 *   POST /v1/bash/write                      {session_id, input, command_id?}      -> "Input written"
 *   POST /v1/bash/kill                       {session_id, signal?}                 -> "Signal <sig> sent"
 *   GET  /v1/bash/sessions                                                         -> BashSessionInfo[]
 *   POST /v1/bash/sessions/create            {session_id?, exec_dir?, snapshot_path?} -> BashSessionInfo
 *   POST /v1/bash/sessions/{id}/close                                              -> "Session <id> closed"
 *
 * A bash session is a ptydeck session on a CommandHost (terminal/pipe-commands): the same ids, owners,
 * limits and floor as every other door, listed everywhere, watched in the viewer, closed by the same teardown.
 */
/** How this door names itself in the session's records (who did what, through which door). */
const DOOR = 'aio-bash';

export const BashApiDefaults = {
  /** AIO's default cap on the characters of stdout and of stderr in a synchronous exec's answer. */
  MaxOutputLength: 50_000,
  /** AIO's default long-poll of `output` with `wait: true`, in seconds. */
  WaitTimeoutSecs: 30,
  Signal: 'SIGTERM',
} as const;

/** The signals `kill` sends: AIO documents the first three; the rest are the ones a job is stopped or told with. */
export const BASH_SIGNALS = ['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'] as const;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** An id a bash route may create: AIO treats "" as no id (a new one is made). */
const newSessionId = z
  .string()
  .max(128)
  .refine((v) => v === '' || SESSION_ID_PATTERN.test(v), 'must be 1-128 characters of letters, digits and _ . : @ -, starting with a letter or digit')
  .nullable()
  .optional();
const existingSessionId = z.string().min(1).max(128);
const commandId = z.string().max(128).nullable().optional();
const offset = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable().optional();
const commandText = z
  .string()
  .refine((c) => c.trim().length > 0, 'must not be empty')
  .refine((c) => !c.includes('\0'), 'must not contain NUL');
/** Values are checked here (422, like every type error); names by the route (400, as AIO answers). */
const envValues = z
  .record(z.string(), z.string().refine((v) => !v.includes('\0'), 'must not contain NUL'))
  .refine((m) => Object.keys(m).length <= 256, 'at most 256 variables');

const ExecBody = z.object({
  session_id: newSessionId,
  command: commandText,
  exec_dir: path.nullable().optional(),
  env: envValues.nullable().optional(),
  async_mode: z.boolean().nullable().optional(),
  timeout: optSeconds,
  hard_timeout: optSeconds,
  max_output_length: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable().optional(),
});
const OutputBody = z.object({
  session_id: existingSessionId,
  command_id: commandId,
  offset,
  stderr_offset: offset,
  wait: z.boolean().nullable().optional(),
  wait_timeout: optSeconds,
});
const WriteBody = z.object({ session_id: existingSessionId, input: z.string(), command_id: commandId });
const KillBody = z.object({ session_id: existingSessionId, signal: z.enum(BASH_SIGNALS).nullable().optional() });
const CreateBody = z.object({ session_id: newSessionId, exec_dir: path.nullable().optional(), snapshot_path: path.nullable().optional() });

export const aioBashDoor: Door = {
  register(app: FastifyInstance, ctx: ApiContext) {
    /** The bash session `id` names for this caller: 404 when it cannot see it, 400 when it is a terminal. */
    const lookup = (req: FastifyRequest, id: string): { session: Session; host: CommandHost } => {
      let s: Session;
      try {
        s = ctx.sessionFor(req.principal, id, 'aio');
      } catch (err) {
        // AIO's bash API names the id in its 404 (its /v1/shell says only "Session not found").
        if (err instanceof ApiError && err.status === 404) throw new ApiError(404, `Session ${id} not found`, 'NOT_FOUND');
        throw err;
      }
      s.touch();
      return { session: s, host: hostOf(s) };
    };

    /** The caller's bash session `id`, made now when there is none (AIO: an unknown id is created). */
    const openSession = async (req: FastifyRequest, id: string | undefined, init: { cwd?: string; snapshot?: string | null }) => {
      const existing = id ? ctx.manager.get(id) : undefined;
      if (existing && ctx.canSee(req.principal, existing)) {
        existing.touch();
        return { session: existing, host: hostOf(existing), created: false };
      }
      const bash = requireBash();
      const { session, created } = await ctx.createSession(req.principal, {
        id,
        origin: 'aio-bash',
        cwd: init.cwd,
        host: bashSessionHost({ bash, snapshot: init.snapshot }),
      });
      return { session, host: hostOf(session), created };
    };

    app.post('/v1/bash/exec', async (req) => {
      const body = parse(ExecBody, bodyObject(req.body, 'aio'), 'aio');
      const by = actorOf(req.principal, DOOR);
      const env = checkedEnv(body.env);
      const dir = body.exec_dir ? await checkedDir(body.exec_dir, 'exec_dir') : undefined;
      const { session, host } = await openSession(req, body.session_id || undefined, { cwd: dir });
      // exec_dir is also the session's directory from now on (AIO: "takes effect on every call").
      if (dir) session.workingDir = dir;
      else requireDirectory(session.workingDir);
      const async = body.async_mode === true;
      const cmd = await host.exec(body.command, {
        cwd: session.workingDir,
        env,
        async,
        timeoutSecs: body.timeout,
        hardTimeoutSecs: body.hard_timeout,
        // The floor is asked when the command's turn comes, not only when the request arrived.
        admit: () => admitCommand(session, by, body.command),
      });
      session.touch();
      const limit = async ? 0 : (body.max_output_length ?? BashApiDefaults.MaxOutputLength);
      return envelope(execResult(session, host, cmd, limit));
    });

    app.post('/v1/bash/output', async (req) => {
      const body = parse(OutputBody, bodyObject(req.body, 'aio'), 'aio');
      const { session, host } = lookup(req, body.session_id);
      // command_id picks whose status is reported; the output itself is the session's (as AIO's server reads it).
      const about = body.command_id ? host.find(body.command_id) : null;
      const from = { stdout: body.offset ?? 0, stderr: body.stderr_offset ?? 0 };
      if (body.wait) await host.waitForOutput(from.stdout, from.stderr, (body.wait_timeout ?? BashApiDefaults.WaitTimeoutSecs) * 1000, about);
      const stdout = readStream(host, Stream.Stdout, from.stdout);
      const stderr = readStream(host, Stream.Stderr, from.stderr);
      const cmd = about ?? host.latest;
      return envelope({
        session_id: session.id,
        stdout: stdout.text,
        stderr: stderr.text,
        offset: stdout.next,
        stderr_offset: stderr.next,
        command: cmd ? commandInfo(cmd) : null,
      });
    });

    app.post('/v1/bash/write', async (req) => {
      const body = parse(WriteBody, bodyObject(req.body, 'aio'), 'aio');
      const { session, host } = lookup(req, body.session_id);
      checkInputSize(ctx, body.input);
      const target = (body.command_id ? host.find(body.command_id) : null) ?? host.current;
      if (!target?.takesInput) throw new ApiError(400, 'No running process to write to', 'NO_RUNNING_PROCESS');
      // Through the session, so the floor and every input rule apply as on the other doors. No newline is added.
      host.withStdinTarget(target, () => session.write(body.input, actorOf(req.principal, DOOR)));
      return { success: true, message: 'Input written', data: null };
    });

    app.post('/v1/bash/kill', async (req) => {
      const body = parse(KillBody, bodyObject(req.body, 'aio'), 'aio');
      const { session } = lookup(req, body.session_id);
      const signal = body.signal ?? BashApiDefaults.Signal;
      // A pipe session's "foreground" is its current command's process group. 200 even when nothing
      // runs (as AIO answers); the floor may refuse (423).
      session.signalForeground(signal, actorOf(req.principal, DOOR));
      return { success: true, message: `Signal ${signal} sent`, data: null };
    });

    app.get('/v1/bash/sessions', async (req) => {
      const list = ctx.visibleSessions(req.principal).flatMap((s) => {
        const host = commandHostOf(s);
        return host ? [sessionInfo(s, host)] : [];
      });
      return envelope(list);
    });

    app.post('/v1/bash/sessions/create', async (req) => {
      const body = parse(CreateBody, bodyObject(req.body, 'aio'), 'aio');
      const cwd = body.exec_dir ? await checkedDir(body.exec_dir, 'exec_dir') : undefined;
      const snapshot = body.snapshot_path ? asBadRequest(() => readSnapshot(body.snapshot_path!)) : null;
      // An id that is already open comes back unchanged; the new arguments are ignored (as AIO does).
      const { session, host } = await openSession(req, body.session_id || undefined, { cwd, snapshot });
      return envelope(sessionInfo(session, host));
    });

    app.post('/v1/bash/sessions/:session_id/close', async (req) => {
      const id = (req.params as { session_id: string }).session_id;
      const s = ctx.manager.get(id);
      // AIO answers 200 for an unknown id; another agent's session is unknown to this caller.
      if (!s || !ctx.canSee(req.principal, s)) return failure(`Session ${id} not found`);
      await ctx.manager.close(id, actorOf(req.principal, DOOR));
      return { success: true, message: `Session ${id} closed`, data: null };
    });
  },
};

function hostOf(session: Session): CommandHost {
  const host = commandHostOf(session);
  if (!host) {
    throw new ApiError(
      400,
      `Session ${session.id} is a terminal, not a bash-API session: run commands in it with /v1/shell/exec or /v2/pty/sessions/${session.id}/exec`,
      'NOT_A_BASH_SESSION',
    );
  }
  return host;
}

function requireBash(): string {
  const bash = bashBinary();
  if (!bash) throw new ApiError(503, 'Bash service not available: no bash binary was found on this machine', 'UNAVAILABLE');
  return bash;
}

/** AIO answers a bad variable name with 400 (its values are type-checked with the rest, 422). */
function checkedEnv(env: Record<string, string> | null | undefined): Record<string, string> | undefined {
  if (!env) return undefined;
  for (const name of Object.keys(env)) {
    if (!ENV_NAME.test(name)) throw new ApiError(400, `env: invalid variable name ${JSON.stringify(name)}: names are letters, digits and _, not starting with a digit`, 'INVALID_REQUEST');
    if (name.startsWith('PTYDECK_')) throw new ApiError(400, `env: ${name}: variables named PTYDECK_* are ptydeck's own and cannot be set`, 'INVALID_REQUEST');
  }
  return env;
}

function requireDirectory(dir: string): void {
  let ok = false;
  try {
    ok = statSync(dir).isDirectory();
  } catch {
    // missing: refused below
  }
  if (!ok) throw new ApiError(400, `exec_dir: the session's working directory ${JSON.stringify(dir)} no longer exists; pass exec_dir`, 'INVALID_REQUEST');
}

function asBadRequest<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof InvalidRequestError) throw new ApiError(400, err.message, 'INVALID_REQUEST');
    throw err;
  }
}

/**
 * A stream from `from` to its end, as text. While a command runs, a character whose last bytes have
 * not arrived yet is left for the next read (the offset stops before it), so reads joined together
 * decode exactly as the whole stream would.
 */
function readStream(host: CommandHost, channel: StreamChannel, from: number): { text: string; next: number } {
  const { data, from: at } = host.streams.read(channel, from);
  const bytes = host.current ? data.subarray(0, data.length - incompleteTailLength(data)) : data;
  return { text: bytes.toString('utf8'), next: at + bytes.length };
}

function execResult(session: Session, host: CommandHost, cmd: PipeCommand, maxChars: number) {
  // As AIO: the command's output is everything from its start to now, and the offsets are the streams'
  // ends, so a caller that polls on from them misses nothing.
  const stdout = readStream(host, Stream.Stdout, cmd.stdoutStart);
  const stderr = readStream(host, Stream.Stderr, cmd.stderrStart);
  return {
    session_id: session.id,
    command_id: cmd.id,
    command: cmd.command,
    status: cmd.status,
    stdout: stdout.text ? middleTruncate(stdout.text, maxChars) : null,
    stderr: stderr.text ? middleTruncate(stderr.text, maxChars) : null,
    exit_code: cmd.status === 'running' ? null : cmd.exitCode,
    offset: stdout.next,
    stderr_offset: stderr.next,
  };
}

function commandInfo(cmd: PipeCommand) {
  return { command_id: cmd.id, command: cmd.command, status: cmd.status, exit_code: cmd.status === 'running' ? null : cmd.exitCode };
}

function sessionInfo(session: Session, host: CommandHost) {
  return {
    session_id: session.id,
    status: session.closed || host.isClosed ? 'closed' : 'ready',
    working_dir: session.workingDir,
    created_at: session.createdAt.toISOString(),
    last_used_at: session.lastUsedAt.toISOString(),
    current_command: host.current?.command ?? null,
    command_count: host.commandCount,
  };
}

/** Head and tail of `text` with a marker saying how much of the middle was left out; 0 keeps it whole. */
export function middleTruncate(text: string, maxChars: number): string {
  if (maxChars <= 0 || text.length <= maxChars) return text;
  let head = Math.ceil(maxChars / 2);
  let tail = text.length - (maxChars - head);
  // Never split a surrogate pair.
  if (isHighSurrogate(text.charCodeAt(head - 1))) head--;
  if (isLowSurrogate(text.charCodeAt(tail))) tail++;
  return `${text.slice(0, head)}\n... [${tail - head} characters truncated] ...\n${text.slice(tail)}`;
}

const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;
