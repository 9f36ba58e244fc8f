import type { FastifyRequest } from 'fastify';
import { truncateOutput, type CommandRecord, type ExecOutcome } from '../terminal/commands';
import { InvalidRequestError } from '../terminal/errors';
import { existingDirectory } from '../terminal/paths';
import type { Session } from '../terminal/session';
import type { CommandStatus } from '../../shared/types';
import { ApiError } from './errors';
import type { ApiContext } from './server';

/**
 * What AIO's v1 and v2 routes have in common: the `{success, message, data}` envelope and the shapes
 * of a command result, a screen, a session listing. Both dialects address the same sessions.
 */
export const envelope = <T>(data: T, message = 'Operation successful') => ({ success: true, message, data });

export const failure = (message: string) => ({ success: false, message, data: null });

export interface CommandResult {
  session_id: string;
  command: string;
  status: CommandStatus;
  output: string | null;
  console: { ps1: string; command: string; output: string }[] | null;
  exit_code: number | null;
}

const outcomeMessage = (outcome: ExecOutcome, opts: { timeout?: number | null; hard?: number | null; noChange?: number | null }): string => {
  switch (outcome) {
    case 'completed':
      return 'Command executed';
    case 'async':
      return 'Command sent for execution';
    case 'timeout':
      return `Command still running (timeout ${opts.timeout}s reached)`;
    case 'hard_timeout':
      return `Command interrupted: hard timeout of ${opts.hard}s reached`;
    case 'no_change_timeout':
      return `Command interrupted: no new output for ${opts.noChange}s`;
    case 'terminated':
      return 'Command terminated: the shell exited';
  }
};

export function commandResult(
  session: Session,
  rec: CommandRecord,
  outcome: ExecOutcome,
  opts: { truncate: boolean; timeout?: number | null; hard?: number | null; noChange?: number | null },
) {
  const running = outcome === 'async' || outcome === 'timeout';
  const text = running ? null : session.commands.outputText(rec);
  const data: CommandResult = {
    session_id: session.id,
    command: rec.command ?? '',
    status: running ? 'running' : rec.status,
    output: text === null ? null : opts.truncate ? truncateOutput(text) : text,
    console: running ? null : [...session.commands.console],
    exit_code: !running && rec.status === 'completed' ? rec.exitCode : null,
  };
  return envelope(data, outcomeMessage(outcome, opts));
}

/** The command's output so far (live while it runs, the last output after it ends). */
export function screenOf(session: Session) {
  const rec = session.commands.latest;
  const running = rec !== null && rec.status === 'running';
  return {
    session_id: session.id,
    output: rec ? truncateOutput(session.commands.outputText(rec)) : '',
    status: (rec?.status ?? 'completed') as CommandStatus,
    command: running ? rec!.command : null,
    exit_code: rec && rec.status === 'completed' ? rec.exitCode : null,
    console: [...session.commands.console],
  };
}

export function sessionStatus(s: Session): string {
  if (s.closed || s.exit) return 'exited';
  if (!s.started) return 'created';
  const rec = s.commands.current;
  return (rec && !rec.shellDone) || s.shellState === 'busy' ? 'active' : 'idle';
}

export function sessionInfo(s: Session) {
  const rec = s.commands.current;
  return {
    session_id: s.id,
    working_dir: s.currentDir(),
    created_at: s.createdAt.toISOString(),
    last_used_at: s.lastUsedAt.toISOString(),
    age_seconds: Math.floor((Date.now() - s.createdAt.getTime()) / 1000),
    status: sessionStatus(s),
    current_command: rec && !rec.shellDone ? rec.command : null,
    cols: s.cols,
    rows: s.rows,
    backend: s.backendKind,
    owner: s.owner,
    controller: s.floor.controller,
    floor: s.floor.mode,
    no_change_timeout: s.noChangeTimeoutSecs,
    attached_clients: s.attachedClients,
    // ptydeck's extensions: what to call it, and why the floor is what it is.
    title: s.title.title,
    floor_reason: s.floorReason,
  };
}

/** Counts of what the caller may see: an agent, its own sessions against its own limit; the person, all of them. */
export function statsOf(ctx: ApiContext, req: FastifyRequest) {
  const visible = ctx.visibleSessions(req.principal);
  const now = Date.now();
  const active = visible.filter((s) => !ctx.manager.isReclaimable(s) || now - s.lastUsedAt.getTime() < 300_000).length;
  const max = ctx.manager.limitFor(req.principal.name);
  return {
    total_sessions: visible.length,
    active_sessions: active,
    idle_sessions: visible.length - active,
    max_sessions: max,
    session_timeout: ctx.manager.config.idleTimeoutSecs,
    usage_ratio: Math.round((visible.length / max) * 1000) / 1000,
  };
}

/** Waits up to `seconds` for the running command; answers with its status and AIO's message for it. */
export async function waitFor(session: Session, seconds: number) {
  const rec = await session.commands.wait(seconds * 1000);
  const status: CommandStatus = rec?.status ?? 'completed';
  const messages: Record<CommandStatus, string> = {
    completed: 'Process completed successfully',
    running: 'Process is still running',
    hard_timeout: 'Process reached hard timeout',
    no_change_timeout: 'Process is still running (no new output yet)',
    terminated: 'Process terminated',
    denied: 'Command denied: it did not run',
  };
  return envelope({ status, exit_code: rec && status === 'completed' ? rec.exitCode : null, command: rec?.command ?? null }, messages[status]);
}

/** Validates a directory the way AIO does: it must exist; the error says which and why. */
export async function checkedDir(dir: string, field = 'cwd'): Promise<string> {
  try {
    return await existingDirectory(dir, field);
  } catch (err) {
    if (err instanceof InvalidRequestError) throw new ApiError(400, err.message, 'INVALID_REQUEST');
    throw err;
  }
}

export function checkInputSize(ctx: ApiContext, input: string): void {
  const n = Buffer.byteLength(input);
  if (n > ctx.config.limits.inputBytes) throw new ApiError(413, `input is ${n} bytes; the limit for one input is ${ctx.config.limits.inputBytes} bytes`, 'PAYLOAD_TOO_LARGE');
}

export function terminalUrl(req: FastifyRequest, ctx: ApiContext, id: string): string {
  // The Host header has passed the rebinding check, so it names this server as the caller reached it.
  const host = req.headers.host ?? new URL(ctx.baseUrl()).host;
  return `${ctx.config.tls ? 'https' : 'http'}://${host}/terminal?session_id=${encodeURIComponent(id)}`;
}
