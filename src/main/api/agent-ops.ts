import { z } from 'zod';
import { truncateOutput } from '../terminal/commands';
import { CommandConstants, SessionConstants } from '../terminal/constants';
import { SendConstants } from '../terminal/send';
import { utf8Tail } from '../terminal/utf8';
import { actorOf, type Principal } from './auth';
import { checkedDir, checkInputSize } from './aio-common';
import { ApiError } from './errors';
import type { ApiContext } from './server';
import { dimension, envMap, path, sessionId, title } from './validate';

/**
 * The agent contract of seeds 001/002 as plain operations: open, send, exec, read, signal, close, list.
 * The native REST routes (native.ts) and the MCP tools (mcp.ts) are both thin shells over these, so
 * an agent gets the same answers whichever way it calls.
 */
export const OpenArgs = z.object({
  id: sessionId.nullable().optional(),
  cwd: path.nullable().optional(),
  cols: dimension(SessionConstants.MaxCols).nullable().optional(),
  rows: dimension(SessionConstants.MaxRows).nullable().optional(),
  env: envMap.nullable().optional(),
  title: title.nullable().optional(),
});
export const RenameArgs = z.object({ title: title.nullable() });
export const SendArgs = z.object({
  text: z.string(),
  submit: z.boolean().optional(),
  timeout_ms: z.number().int().min(1).max(SendConstants.MaxTimeoutMs).optional(),
  idle_ms: z.number().int().min(100).max(SendConstants.MaxTimeoutMs).optional(),
});
export const ExecArgs = z.object({
  command: z.string().refine((c) => c.trim().length > 0, 'must not be empty'),
  timeout_ms: z.number().int().min(1).max(SendConstants.MaxTimeoutMs).optional(),
});
export const ReadArgs = z.object({
  offset: z.coerce.number().int().min(0).optional(),
  count: z.coerce.number().int().min(1).max(100_000).optional(),
});
export const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGTSTP', 'SIGHUP'] as const;
export const SignalArgs = z.object({ signal: z.enum(SIGNALS) });

/** A page of a read is capped at this many bytes (the newest lines are kept). */
export const MaxReadBytes = 256 * 1024;

export class AgentOps {
  constructor(
    private readonly ctx: ApiContext,
    private readonly principal: Principal,
    private readonly origin: 'native' | 'mcp',
  ) {}

  /** Who these operations act as: an agent by its name, or the person (never refused by the floor). */
  private get actor() {
    return actorOf(this.principal, this.origin);
  }

  private session(id: string) {
    const s = this.ctx.sessionFor(this.principal, id, 'native');
    s.touch();
    return s;
  }

  async open(args: z.infer<typeof OpenArgs>) {
    const person = this.principal.kind === 'admin' && this.origin === 'native';
    const cwd = args.cwd ? await checkedDir(args.cwd) : undefined;
    const { session, created } = await this.ctx.createSession(this.principal, {
      id: args.id ?? undefined,
      origin: person ? 'viewer' : this.origin,
      explicit: true,
      cwd,
      cols: args.cols,
      rows: args.rows,
      env: args.env,
      title: args.title,
      // A person's own terminal from the viewer: their rc file (the floor follows the credential).
      loadUserRc: person,
    });
    return { session, created };
  }

  /** Names a session: its owning agent or the person (another agent gets 404, as for any call). */
  rename(id: string, args: z.infer<typeof RenameArgs>) {
    const s = this.session(id);
    s.rename(args.title, this.actor);
    return s.summary();
  }

  async send(id: string, args: z.infer<typeof SendArgs>) {
    const s = this.session(id);
    checkInputSize(this.ctx, args.text);
    // "" types nothing and presses nothing unless asked: it watches (pressing Enter would answer a prompt).
    const submit = args.submit ?? args.text !== '';
    const r = await s.send({ text: args.text, submit, timeoutMs: args.timeout_ms, idleMs: args.idle_ms, writer: this.actor });
    return {
      viewport: r.viewport,
      wait_reason: r.waitReason,
      at_shell_prompt: r.atShellPrompt,
      session_status:
        r.sessionStatus.kind === 'shell_alive'
          ? { kind: 'shell_alive' as const }
          : { kind: 'shell_exited' as const, exit_code: r.sessionStatus.exitCode, signal: r.sessionStatus.signal },
      truncated: r.truncated,
      detector: r.detector,
    };
  }

  async exec(id: string, args: z.infer<typeof ExecArgs>) {
    const s = this.session(id);
    const timeoutSecs = (args.timeout_ms ?? SendConstants.TimeoutMs) / 1000;
    const { record, outcome } = await s.exec(args.command, { timeoutSecs, noChangeTimeoutSecs: 0, writer: this.actor });
    const running = outcome === 'timeout';
    const full = s.commands.outputText(record);
    const output = truncateOutput(full);
    return {
      status: running ? 'running' : record.status,
      exit_code: !running && record.status === 'completed' ? record.exitCode : null,
      output,
      // The middle was cut (here, or already when the log was rendered): terminal_read pages through the rest.
      truncated: output !== full || full.includes(CommandConstants.TruncationNotice),
    };
  }

  async read(id: string, args: z.infer<typeof ReadArgs>) {
    return readPage(await this.session(id).screen.allLines(), args.offset ?? 0, args.count ?? 500);
  }

  signal(id: string, args: z.infer<typeof SignalArgs>) {
    const s = this.session(id);
    // Only a running program is signalled: at the prompt the foreground group is the shell's own.
    const r = s.signalForeground(args.signal, this.actor, { programOnly: true });
    if (r.refused) throw new ApiError(400, `${args.signal} refused: ${r.refused}`, 'SIGNAL_REFUSED');
    if (r.noProgram) return { delivered: false, target_pgid: null, reason: 'no program is running: the shell waits at its prompt, and the shell itself is never signalled (close the terminal to end it)' };
    return { delivered: r.delivered, target_pgid: r.targetPgid };
  }

  async close(id: string) {
    const s = this.session(id);
    const report = await this.ctx.manager.close(s.id, this.actor);
    return { id: s.id, closed: true, survivors: report?.survivors ?? [], tracked_by: report?.trackedBy ?? null };
  }

  list() {
    return this.ctx.visibleSessions(this.principal).map((s) => s.summary());
  }
}

/** Lines counted back from the newest: offset 0 ends at the last line. Numbered from the oldest kept. */
export function readPage(lines: string[], offset: number, count: number) {
  const total = lines.length;
  const end = Math.max(0, total - offset);
  let begin = Math.max(0, end - count);
  let text = lines.slice(begin, end).join('\n');
  let truncated = false;
  if (Buffer.byteLength(text) > MaxReadBytes) {
    // Keep the newest whole lines that fit.
    text = utf8Tail(text, MaxReadBytes);
    const firstNl = text.indexOf('\n');
    text = firstNl >= 0 ? text.slice(firstNl + 1) : text;
    begin = end - text.split('\n').length;
    truncated = true;
  }
  return { text, total_lines: total, line_begin: begin, line_end: end, truncated };
}
