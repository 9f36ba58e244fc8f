import { lstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { LineGateConstants } from './line-gate';

/**
 * The loopback port that gated shells ask their questions on (see line-gate-hook.ts for the shell's
 * half). One request is 11 NUL-terminated fields:
 *
 *   ask · nonce · seq · pid · line number · kind (line|command) · keys pending (0|1) · $PWD ·
 *   history (0: none, 1: it follows, 2: recorded, sent on request) · the command as bash parsed it ·
 *   `history 1` output (or empty)
 *
 * and its answer one line: `allow <seq> line|ask`, `deny <seq> <what to print>`, or `more <seq>`: send
 * the question again with the line from history (asked only when a rule could stop the line: a line
 * let through at once costs the shell one write and one read). The nonce (the
 * session's marker nonce) says which shell asks; a request with an unknown nonce is refused. A shell
 * keeps its connection and asks one question at a time: a new request on a connection means the shell
 * gave up on the previous question, which is then cancelled. `cancel` (same 11 fields, the rest empty)
 * says so without asking anything: ^C ended the wait. An empty line answers nothing (it acknowledges
 * half a question at once, see serve); the shell skips it.
 */
export interface ShellRequest {
  seq: string;
  pid: number;
  lineNumber: string;
  kind: 'line' | 'command';
  keysPending: boolean;
  pwd: string;
  /** The command as bash parsed it (aliases expanded by the hook). */
  command: string;
  /** The whole line as history recorded it; null when it was not sent. */
  history: string | null;
  /** History recorded the line and the shell sends it when answered `more`. */
  historyOffered: boolean;
}

export type ShellAnswer = { allow: true; rest: 'line' | 'ask' } | { allow: false; message: string } | { more: true };

export type ShellAsker = (req: ShellRequest, signal: AbortSignal) => Promise<ShellAnswer>;

const FIELDS = 11;
const PORT_FILE = 'line-gate.port';

/**
 * Where the gate of the server on `stateDir` keeps its port file. A server that crashed leaves it for its
 * successor, which makes the same one again.
 */
export const stableGateDir = (stateDir: string): string =>
  join(tmpdir(), `ptydeck-gate-${process.getuid?.() ?? 'u'}-${createHash('sha256').update(stateDir).digest('hex').slice(0, 16)}`);

export class LineGateServer {
  private server: Server | null = null;
  private readonly shells = new Map<string, ShellAsker>();
  private readonly sockets = new Set<Socket>();
  private readonly dir: string;
  readonly portFile: string;

  /**
   * The port file lives in a 0700 directory of this user's under the temporary directory, named from a
   * digest of ptydeck's state directory: the same after a restart (a tmux session's shell finds the new
   * port there), without telling the shells, which read its path, where ptydeck keeps its credentials.
   * If that name is taken by anything but our own private directory, a fresh random one is used.
   */
  constructor(stateDir: string | null) {
    const stable = stateDir ? stableGateDir(stateDir) : null;
    this.dir = stable && ownPrivateDir(stable) ? stable : mkdtempSync(join(tmpdir(), 'ptydeck-gate-'));
    this.portFile = join(this.dir, PORT_FILE);
  }

  /** Listens on 127.0.0.1 (never another address: only local shells ask) and records the port. */
  async start(): Promise<number> {
    if (this.server) return this.port;
    const server = createServer((socket) => this.serve(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => console.error('ptydeck: the line gate port failed:', err));
    this.server = server;
    const tmp = `${this.portFile}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(tmp, `${this.port}\n`, { mode: 0o600 });
    renameSync(tmp, this.portFile);
    return this.port;
  }

  get port(): number {
    const addr = this.server?.address();
    return typeof addr === 'object' && addr ? addr.port : 0;
  }

  /** The shell with this nonce asks through `asker`; the returned function forgets it. */
  register(nonce: string, asker: ShellAsker): () => void {
    this.shells.set(nonce, asker);
    return () => {
      if (this.shells.get(nonce) === asker) this.shells.delete(nonce);
    };
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((r) => server.close(() => r()));
    // A restarted ptydeck makes the same directory again before any shell could need it.
    rmSync(this.dir, { recursive: true, force: true });
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    let chunks: Buffer[] = [];
    let size = 0;
    let fields: string[] = [];
    let current: AbortController | null = null;
    // A connection that never completes a request is not kept for ever.
    let idle: NodeJS.Timeout | null = setTimeout(() => socket.destroy(), LineGateConstants.HelloTimeoutMs);
    const forget = (): void => {
      current?.abort();
      current = null;
      if (idle) clearTimeout(idle);
      idle = null;
      this.sockets.delete(socket);
    };
    socket.on('error', () => socket.destroy());
    socket.on('close', forget);
    let refused = false;
    socket.on('data', (data: Buffer) => {
      if (refused) return;
      let from = 0;
      for (;;) {
        const nul = data.indexOf(0, from);
        if (nul < 0) break;
        chunks.push(data.subarray(from, nul));
        size += nul - from + 1;
        fields.push(Buffer.concat(chunks).toString('utf8'));
        chunks = [];
        from = nul + 1;
        if (fields.length === FIELDS) {
          const request = fields;
          fields = [];
          size = 0;
          if (idle) clearTimeout(idle);
          idle = null;
          current?.abort();
          current = new AbortController();
          void this.answer(socket, request, current.signal);
        }
      }
      if (from < data.length) {
        chunks.push(data.subarray(from));
        size += data.length - from;
      }
      if (size > LineGateConstants.MaxQuestionBytes) {
        const seq = /^\d{1,12}$/.test(fields[2] ?? '') ? fields[2] : '0';
        refused = true;
        current?.abort();
        socket.end(`deny ${seq} ptydeck: this command line is too long to be shown for approval, so it was not run\n`);
      } else if (size > 0 || fields.length > 0) {
        // Half a question: the rest is held by the shell's kernel (Nagle) until this part is acknowledged,
        // and ours would acknowledge it only after its delayed-ACK timer (40 ms). bash writes a question
        // in several pieces whenever it holds a newline (its stdout is line-buffered: every line of
        // history does) or is longer than its buffer. An empty line carries the ACK at once, and the
        // hook skips empty lines (an answer without its sequence number).
        socket.write('\n');
      }
    });
  }

  private async answer(socket: Socket, f: string[], signal: AbortSignal): Promise<void> {
    const seq = /^\d{1,12}$/.test(f[2]) ? f[2] : '0';
    const reply = (a: ShellAnswer): void => {
      if (signal.aborted || socket.destroyed) return;
      socket.write('more' in a ? `more ${seq}\n` : a.allow ? `allow ${seq} ${a.rest}\n` : `deny ${seq} ${oneLine(a.message)}\n`);
    };
    // The request itself withdrew the question before it (serve); a cancel asks nothing more.
    if (f[0] === 'cancel') return;
    const asker = f[0] === 'ask' ? this.shells.get(f[1]) : undefined;
    if (!asker || (f[5] !== 'line' && f[5] !== 'command')) {
      reply({ allow: false, message: 'ptydeck: this shell is not known to the approval gate, so this line was not run' });
      return;
    }
    const req: ShellRequest = {
      seq,
      pid: Number.parseInt(f[3], 10) || 0,
      lineNumber: f[4],
      kind: f[5],
      keysPending: f[6] !== '0',
      pwd: f[7],
      command: f[9],
      history: f[8] === '1' ? stripHistoryNumber(f[10]) : null,
      historyOffered: f[8] === '2',
    };
    try {
      reply(await asker(req, signal));
    } catch (err) {
      reply({ allow: false, message: `ptydeck: the approval gate failed (${(err as Error).message}), so this line was not run` });
    }
  }
}

/** Creates `dir` 0700, or accepts it if it exists as a real directory of ours that nobody else may enter. */
function ownPrivateDir(dir: string): boolean {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return false;
  }
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && (process.getuid ? st.uid === process.getuid() : true) && (st.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

/** `history 1` prints "%5d%c %s\n" (the mark is `*` for an edited entry); the line is what follows. */
export function stripHistoryNumber(out: string): string {
  const m = /^ *\d+[ *] /.exec(out);
  const text = m ? out.slice(m[0].length) : out;
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

/** What the shell prints must stay one line without control characters (they would reach the terminal). */
function oneLine(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\x00-\x1f\x7f\u0080-\u009f]+/g, ' ').trim();
}
