import { readlinkSync } from 'node:fs';
import { agent, type Actor } from './actor';
import type { Emitter } from './emitter';
import type { SessionEvents } from './session';
import { DeniedError, type LineGate, type LineQuestion, type LineVerdict } from './line-gate';
import type { LineGateServer, ShellAnswer, ShellRequest } from './line-gate-server';
import { hasProcfs } from './processes';

/** What the manager hands a gated session: the gate to ask, and the port its shell asks on. */
export interface GateHost {
  gate: LineGate;
  server: LineGateServer;
  /** Whether sessions of this owner are gated at all (the person's own sessions are not). */
  appliesTo(owner: string): boolean;
}

/** The moments a gated session tells its subscribers about (session.ts `SessionEvents.gate`). */
export type GateEvent =
  | { state: 'waiting'; text: string; by: Actor }
  | { state: 'decided'; allowed: true }
  | { state: 'decided'; allowed: false; reason: string; message: string; by: Actor };

/** The little a link needs from its session. */
export interface GatedSession {
  readonly id: string;
  readonly owner: string;
  readonly events: Emitter<SessionEvents>;
  currentDir(): string;
}

/**
 * One session's end of the line gate. It keeps what only the server knows: who typed the line the
 * shell is about to run. Every write to the terminal carries an actor; a line is the person's only if
 * the person typed since the last line and no agent did since the terminal's queue was last empty (the
 * shell says whether keys were still queued when it asked), so an agent's keys typed ahead cannot ride
 * on a person's Enter.
 *
 * While a person decides, the session is *held*: exec and send stop their own timers (commands.ts,
 * send.ts read `heldMs`), and the decision is published as a `gate` event.
 */
export class LineGateLink {
  private agentSinceDrain: Actor | null = null;
  private personSince: Actor | null = null;
  /** The line being run, as first asked about: later questions about commands in it belong to it. */
  private line: { number: string; pid: number; text: string; by: Actor; answer?: Exclude<ShellAnswer, { more: true }>; awaitingHistory?: boolean } | null = null;
  private lastExec: { typed: string; command: string } | null = null;
  private readonly waiting = new Set<AbortController>();
  /** Questions waiting for a person now, and since when the first of them waits. */
  private holds = 0;
  private holdStartedAt = 0;
  private heldBefore = 0;
  private readonly offs: (() => void)[] = [];
  /** Shells without the hook: the agent's keys since its last Enter (door-level gate). */
  private typedLine = '';
  private doorQueue: Promise<void> = Promise.resolve();

  constructor(
    private readonly session: GatedSession,
    private readonly host: GateHost,
  ) {
    const ev = session.events;
    this.offs.push(
      ev.on('input', (e) => this.noteInput(e.by, e.data, e.command)),
      // The shell is gone: nobody waits for an answer any more. (A shell that gave up on a question
      // says so on its connection; see line-gate-server.ts.)
      ev.on('exit', () => this.cancelWaiting()),
      ev.on('closed', () => this.dispose()),
    );
  }

  /** Where the hook finds the gate's port. */
  get portFile(): string {
    return this.host.server.portFile;
  }

  /** The shell with this nonce has the hook: its questions come over the gate port. */
  listen(nonce: string): void {
    this.offs.push(this.host.server.register(nonce, (req, signal) => this.answerShell(req, signal)));
  }

  /** Milliseconds this session has spent waiting for a person, the current wait included. */
  heldMs(): number {
    return this.heldBefore + (this.holds > 0 ? Date.now() - this.holdStartedAt : 0);
  }

  get held(): boolean {
    return this.holds > 0;
  }

  dispose(): void {
    this.cancelWaiting();
    for (const off of this.offs.splice(0)) off();
  }

  /**
   * The door-level gate, for shells without the hook: asks about `text` (an exec's command, a send's
   * line) before it is typed. Throws DeniedError when it may not run.
   */
  async checkAtDoor(text: string, by: Actor): Promise<void> {
    if (by.kind !== 'agent') return;
    const verdict = await this.ask({ scope: 'line', text, line: text, by, via: 'door', cwd: this.session.currentDir() });
    if (!verdict.allow) throw new DeniedError(verdict.message, verdict.reason);
  }

  /**
   * The door-level gate for keys (shells without the hook): an agent's Enter is held until the line it
   * ends is allowed; a refused line is erased (^U) instead of entered. Writes keep their order.
   * `write` receives what may go to the terminal now; `notice` shows a refusal on the terminal.
   */
  typeAtDoor(data: string | Uint8Array, by: Actor, write: (d: string | Uint8Array) => void, notice: (text: string) => void): void {
    const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
    if (by.kind === 'agent' && /[\r\n]/.test(text) && this.host.gate.passes?.(by, this.session.owner)) {
      // No rule can stop this agent: its keys go in as they came, as one write (answering a hidden prompt
      // stays one input), and only the part after the last Enter is kept as the line being typed.
      this.enqueue(() => {
        this.typedLine = editLine('', text.slice(Math.max(text.lastIndexOf('\r'), text.lastIndexOf('\n')) + 1));
        write(data);
      });
      return;
    }
    if (by.kind !== 'agent' || !/[\r\n]/.test(text)) {
      this.enqueue(() => {
        if (by.kind === 'agent') this.typedLine = editLine(this.typedLine, text);
        else if (/[\r\n]/.test(text)) this.typedLine = '';
        write(data);
      });
      return;
    }
    // Each Enter ends a line that is asked about before the Enter goes in.
    const pieces = text.split(/(\r\n|\r|\n)/);
    for (let i = 0; i < pieces.length; i += 2) {
      const before = pieces[i];
      const enter = pieces[i + 1];
      this.enqueue(async () => {
        if (before) write(before);
        const line = editLine(this.typedLine, before);
        this.typedLine = '';
        if (enter === undefined) {
          this.typedLine = line;
          return;
        }
        const verdict = line.trim() ? await this.ask({ scope: 'line', text: line, line, by, via: 'door', cwd: this.session.currentDir() }) : ({ allow: true } as const);
        if (verdict.allow) write(enter);
        else {
          write('\x15');
          notice(forShell(verdict.message));
        }
      });
    }
  }

  /** Door-level writes run one after another; one that fails (a closed terminal) does not stop the rest. */
  private enqueue(step: () => void | Promise<void>): void {
    this.doorQueue = this.doorQueue.then(step).catch((err) => console.error('ptydeck: a held write failed:', err));
  }

  private noteInput(by: Actor, data: string | Uint8Array, command?: string): void {
    if (by.kind === 'agent') this.agentSinceDrain = by;
    else if (by.kind === 'person') this.personSince = by;
    if (command !== undefined && typeof data === 'string') {
      // exec types its command encoded (^E^U, then the line, eval $'...' or `. file`, then Enter).
      // eslint-disable-next-line no-control-regex
      this.lastExec = { typed: data.replace(/^[\x05\x15]+/, '').replace(/\r$/, ''), command };
    }
  }

  private async answerShell(req: ShellRequest, signal: AbortSignal): Promise<ShellAnswer> {
    let line = this.line;
    const sameLine = line !== null && line.number === req.lineNumber;
    if (req.kind === 'line' && sameLine && line!.pid === req.pid && line!.awaitingHistory) {
      // The shell sends the line from history, as asked: the line and who typed it are already known.
      line!.awaitingHistory = false;
      // An empty history (its file could not be written) stands for nothing: the command stands for the line.
      line!.text = this.asTyped(req.history || req.command);
    } else if (req.kind === 'line' && sameLine && line!.pid !== req.pid && line!.answer) {
      // A subshell that began the line asks again about a line its parent already had answered. (The
      // shell that asked first never asks twice about one line: from it, that is a new line.)
      if (!line!.answer.allow || line!.answer.rest === 'line' || req.command === line!.text) return line!.answer;
    } else if (req.kind === 'line') {
      // A new line: who typed it is decided now, from the writes since the last one.
      const by = this.agentSinceDrain ?? this.personSince ?? agent(this.session.owner, 'unknown');
      if (!req.keysPending) this.agentSinceDrain = null;
      this.personSince = null;
      line = this.line = { number: req.lineNumber, pid: req.pid, text: this.asTyped(req.history ?? req.command), by };
      if (this.host.gate.passes?.(by, this.session.owner)) return (line.answer = { allow: true, rest: 'line' });
      if (req.history === null && req.historyOffered) {
        line.awaitingHistory = true;
        return { more: true };
      }
    } else if (!sameLine) {
      // A command question for a line never asked about (a subshell asked first): its own text stands for it.
      line = this.line = { number: req.lineNumber, pid: req.pid, text: req.command, by: this.agentSinceDrain ?? agent(this.session.owner, 'unknown') };
    }
    const current = line!;
    const cwd = cwdOf(req.pid) ?? req.pwd;
    const base = { line: current.text, by: current.by, via: 'shell' as const, cwd, signal };
    if (req.kind === 'line' && !current.answer) {
      const v = await this.ask({ ...base, scope: 'line', text: current.text }, signal);
      current.answer = v.allow ? { allow: true, rest: v.rest === 'line' ? 'line' : 'ask' } : { allow: false, message: forShell(v.message) };
      if (!v.allow || v.rest === 'line') return current.answer;
      // The first command of the line, as bash parsed it, in the same round trip.
      if (req.command === current.text) return current.answer;
    }
    const v = await this.ask({ ...base, scope: 'command', text: req.command }, signal);
    return v.allow ? { allow: true, rest: v.rest === 'line' ? 'line' : 'ask' } : { allow: false, message: forShell(v.message) };
  }

  /** An exec's encoded line reads as the command the agent gave. */
  private asTyped(text: string): string {
    return this.lastExec && text === this.lastExec.typed ? this.lastExec.command : text;
  }

  private async ask(q: Omit<LineQuestion, 'sessionId' | 'owner' | 'signal'> & { signal?: AbortSignal }, outer?: AbortSignal): Promise<LineVerdict> {
    const ac = new AbortController();
    const stop = (): void => ac.abort();
    (outer ?? q.signal)?.addEventListener('abort', stop, { once: true });
    this.waiting.add(ac);
    try {
      const answer = this.host.gate.decide({ ...q, sessionId: this.session.id, owner: this.session.owner, signal: ac.signal });
      const verdict = answer instanceof Promise ? await this.hold(q, answer) : answer;
      if (!verdict.allow) this.session.events.emit('gate', { state: 'decided', allowed: false, reason: verdict.reason, message: verdict.message, by: q.by });
      return verdict;
    } finally {
      this.waiting.delete(ac);
      (outer ?? q.signal)?.removeEventListener('abort', stop);
    }
  }

  private async hold(q: { text: string; by: Actor }, answer: Promise<LineVerdict>): Promise<LineVerdict> {
    if (this.holds++ === 0) this.holdStartedAt = Date.now();
    this.session.events.emit('gate', { state: 'waiting', text: q.text, by: q.by });
    let verdict: LineVerdict | null = null;
    try {
      verdict = await answer;
      return verdict;
    } finally {
      if (--this.holds === 0) this.heldBefore += Date.now() - this.holdStartedAt;
      // After the hold is over, so that whoever wakes on it sees the session no longer held.
      if (verdict?.allow) this.session.events.emit('gate', { state: 'decided', allowed: true });
    }
  }

  private cancelWaiting(): void {
    for (const ac of this.waiting) ac.abort();
  }
}

/** What the shell prints when it does not run a line: one line, saying it is ptydeck speaking. */
function forShell(message: string): string {
  return `ptydeck: ${message}`;
}

function cwdOf(pid: number): string | null {
  if (!hasProcfs || pid <= 0) return null;
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return null;
  }
}

/** The line an agent's keys leave at a prompt without line editing (backspace and ^U honoured). */
function editLine(line: string, keys: string): string {
  let out = line;
  for (const ch of keys) {
    if (ch === '\x7f' || ch === '\b') out = out.slice(0, -1);
    else if (ch === '\x15' || ch === '\x03') out = '';
    else if (ch >= ' ') out += ch;
  }
  return out;
}
