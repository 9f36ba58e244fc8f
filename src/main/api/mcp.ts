import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Principal } from './auth';
import { AgentOps, ExecArgs, OpenArgs, ReadArgs, RenameArgs, SendArgs, SignalArgs } from './agent-ops';
import { renderError, toApiError } from './errors';
import type { ApiContext, Door } from './server';

/**
 * ptydeck's terminals as MCP tools, over streamable HTTP at /mcp (stateless: each POST is answered on
 * its own; the agent's token is the credential). `ptydeck mcp` bridges stdio to this endpoint for
 * agents that spawn their tools. The descriptions are what a model reads to use the tools well.
 */
export const MCP_INSTRUCTIONS = `Persistent terminals (real bash in a real PTY) that a person may be watching and can take over.
Open one with terminal_open, then drive it with terminal_send (interactive: returns when the program waits) or terminal_exec (one shell command: returns its exit code and output).
Every terminal_send result has a wait_reason; always read it before deciding what to do next:
- stdin_read: the program is blocked reading the terminal right now (">>> ", "Password:", "[y/N]"), or no program runs and the shell waits at its prompt (at_shell_prompt: true). It is waiting for you: send your answer, or your next command.
- inferred_idle: nothing was printed for a while, but nothing is reading the terminal either. The program may still be working (a long build) or stuck; it is NOT waiting for input. Send "" (types nothing) with a longer timeout_ms to keep watching, terminal_read to look back, or terminal_signal SIGINT to stop it.
- timeout: timeout_ms ran out while the program was still busy printing or working. Same choices as inferred_idle.
- session_exit: the shell itself exited (for example after "exit"); the terminal is gone; open a new one.
session_status is about the shell only: shell_alive means the terminal is usable, not that a program is running (at_shell_prompt says that).
Results are compact JSON (the same object is in structuredContent).
If a call fails with "A person has taken control", a human is using the terminal: wait and retry later, do not try to work around it.
A command may wait for a person to approve it before it runs; the call then takes as long as the person does. If it fails with "Denied by a person: <reason>" (or "Denied by the approval policy"), it did not run: read the reason, and do not try to get the same effect another way.`;

const SESSION_ID = z.string().min(1).max(128).describe('The session_id returned by terminal_open (or listed by terminal_list).');

// Compact: a model pays for every byte it reads. The text is the JSON the MCP spec asks for next to
// structuredContent; a client hands its model one or the other.
const result = (data: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(data) }], structuredContent: data as Record<string, unknown> });
const failure = (err: unknown) => {
  const api = toApiError(err);
  return { isError: true, content: [{ type: 'text' as const, text: `${api.message} (${api.status} ${api.code})` }], structuredContent: renderError('native', api) as Record<string, unknown> };
};
const tool = async <T>(run: () => Promise<T> | T) => {
  try {
    return result(await run());
  } catch (err) {
    return failure(err);
  }
};

export function buildMcpServer(ctx: ApiContext, principal: Principal): McpServer {
  const server = new McpServer({ name: 'ptydeck', version: '0.1.0' }, { instructions: MCP_INSTRUCTIONS });
  const ops = new AgentOps(ctx, principal, 'mcp');

  server.registerTool(
    'terminal_open',
    {
      title: 'Open a terminal',
      description:
        'Open a persistent terminal: an interactive bash in a real PTY whose working directory, environment and running programs persist between calls. Returns session_id and the current screen. A person can watch it live in the ptydeck viewer.',
      inputSchema: {
        cwd: OpenArgs.shape.cwd.describe('Absolute directory to start in (default: the home directory).'),
        cols: OpenArgs.shape.cols.describe('Terminal width in columns (default 80).'),
        rows: OpenArgs.shape.rows.describe('Terminal height in rows (default 24).'),
        title: OpenArgs.shape.title.describe('What the person watching should call this terminal, e.g. "deploy: staging" (one line, at most 120 characters). Without one, the program\'s window title or the running command is shown.'),
      },
    },
    (args) =>
      tool(async () => {
        const { session } = await ops.open(args);
        const screen = await session.screen.viewportSince(null, 16 * 1024);
        return { session_id: session.id, status: session.summary().shellState, cwd: session.currentDir(), screen: screen.text };
      }),
  );

  server.registerTool(
    'terminal_rename',
    {
      title: 'Rename a terminal',
      description: 'Set the title the person sees on this terminal\'s tab (one line, at most 120 characters; "" clears it). Useful when the terminal\'s job changes.',
      inputSchema: { session_id: SESSION_ID, title: RenameArgs.shape.title.describe('The new title, or "" to clear it.') },
    },
    ({ session_id, title }) => tool(() => ops.rename(session_id, { title })),
  );

  server.registerTool(
    'terminal_send',
    {
      title: 'Type into a terminal',
      description:
        'Type text into the terminal (Enter is pressed after it unless submit is false) and wait until the program waits for input, goes quiet, times out, or the shell exits. Use it for anything interactive: answering prompts, REPLs (python3, node, psql), TUIs, password or confirmation questions. ' +
        'text "" types nothing (and presses no Enter unless submit is true): it watches, and answers at once when the program already waits for input or the shell waits at its prompt. ' +
        'Returns {viewport, wait_reason, at_shell_prompt, session_status, truncated, detector}. viewport is what changed on the screen as a terminal renders it (a \\r progress bar shows its last state; a full-screen program shows its whole screen). ' +
        'wait_reason: "stdin_read" = the program is blocked reading the terminal and waits for you (answer it), or the shell waits at its prompt; "inferred_idle" = quiet but NOT reading input (still working or stuck: wait longer, read, or interrupt); "timeout" = still busy when timeout_ms ran out; "session_exit" = the shell exited. ' +
        'at_shell_prompt: true when no program runs and the shell waits for a command. session_status: {kind: "shell_alive"} while the shell lives (whether or not a program runs in it), {kind: "shell_exited", exit_code, signal} after. ' +
        'Control keys: send "\\u0003" with submit false for Ctrl-C, "\\u0004" for Ctrl-D, "\\u001b" for Escape. One send at a time per terminal.',
      inputSchema: {
        session_id: SESSION_ID,
        text: SendArgs.shape.text.describe('What to type. Escape sequences and control characters are sent verbatim.'),
        submit: SendArgs.shape.submit.describe('Press Enter after the text (default true; false when text is "").'),
        timeout_ms: SendArgs.shape.timeout_ms.describe('Give up waiting after this many milliseconds (default 30000).'),
        idle_ms: SendArgs.shape.idle_ms.describe('Quiet this long (after some output) counts as inferred_idle (default 3000); raise it for programs that pause before they ask.'),
      },
    },
    ({ session_id, ...args }) => tool(() => ops.send(session_id, args)),
  );

  server.registerTool(
    'terminal_exec',
    {
      title: 'Run one shell command',
      description:
        'Run one shell command at the terminal\'s prompt and return {status, exit_code, output, truncated} when it ends. output is the command\'s text as a person would read it (combined stdout and stderr, no echo, no escape sequences); above 30,000 bytes only its first and last 15,000 are kept and truncated is true (terminal_read pages through the rest). cd and export persist for later calls. Use terminal_send instead for programs that ask questions or stay open. If status is "running", timeout_ms ran out and the command goes on: follow it with terminal_send "" or terminal_read.',
      inputSchema: {
        session_id: SESSION_ID,
        command: ExecArgs.shape.command.describe('The shell command line, e.g. "make test" or "cd src && ls -la".'),
        timeout_ms: ExecArgs.shape.timeout_ms.describe('Stop waiting after this many milliseconds (default 30000); the command keeps running.'),
      },
    },
    ({ session_id, ...args }) => tool(() => ops.exec(session_id, args)),
  );

  server.registerTool(
    'terminal_read',
    {
      title: 'Read scrollback',
      description:
        'Read the terminal\'s scrollback as rendered lines, counted back from the newest: offset 0 returns the last `count` lines; offset 500 the page before that. Returns {text, total_lines, line_begin, line_end, truncated}. Use it to look back at output a send did not return in full.',
      inputSchema: {
        session_id: SESSION_ID,
        offset: z.number().int().min(0).optional().describe('Lines back from the newest line where the page ends (default 0).'),
        count: z.number().int().min(1).max(100_000).optional().describe('How many lines (default 500).'),
      },
    },
    ({ session_id, ...args }) => tool(() => ops.read(session_id, ReadArgs.parse(args))),
  );

  server.registerTool(
    'terminal_signal',
    {
      title: 'Signal the running program',
      description:
        'Send a signal to the program running in the terminal (its foreground process group as it is right now): SIGINT to interrupt (like Ctrl-C), SIGTSTP to suspend, SIGTERM or SIGHUP to ask it to end, SIGKILL to force it. Returns {delivered: true, target_pgid}. The shell itself is never signalled: when no program runs (the shell waits at its prompt) nothing is sent and the answer is {delivered: false, target_pgid: null, reason}. To end the shell, close the terminal.',
      inputSchema: { session_id: SESSION_ID, signal: SignalArgs.shape.signal.describe('Which signal.') },
    },
    ({ session_id, ...args }) => tool(() => ops.signal(session_id, args)),
  );

  server.registerTool(
    'terminal_close',
    {
      title: 'Close a terminal',
      description: 'Close the terminal and end every process started in it (children, grandchildren and daemons they forked). Returns {closed, survivors, tracked_by}; survivors should be empty. tracked_by says how the processes were found: cgroup2/cgroup1 (none can escape) or environment (a process that clears its environment and leaves its session can).',
      inputSchema: { session_id: SESSION_ID },
    },
    ({ session_id }) => tool(() => ops.close(session_id)),
  );

  server.registerTool(
    'terminal_list',
    {
      title: 'List terminals',
      description: 'List your open terminals with their state: shellState ("prompt": the shell waits for a command, "busy": a command runs, "exited"), the running or last command with its exit code, waitingForInput, and controller ("person" while a human has taken over).',
      inputSchema: {},
    },
    () => tool(() => ({ sessions: ops.list() })),
  );

  return server;
}

export const mcpDoor: Door = {
  register(app: FastifyInstance, ctx: ApiContext) {
    app.post('/mcp', async (req, reply) => {
      const server = buildMcpServer(ctx, req.principal);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    });
    // Stateless: no server-to-client stream and no session to delete.
    const notAllowed = async (_req: unknown, reply: { code(n: number): { header(k: string, v: string): { send(b: unknown): unknown } } }) =>
      reply.code(405).header('Allow', 'POST').send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; POST JSON-RPC messages to it' }, id: null });
    app.get('/mcp', notAllowed);
    app.delete('/mcp', notAllowed);
  },
};
