import { parseArgs } from 'node:util';
import { TokenError, TokenStore } from './api/auth';
import { defaultHome, ensureHome } from './home';
import { isLoopbackHost } from './loopback';
import { findRunningServer } from './running-server';
import { environmentWithSecretsTaken } from './secret-env';

/**
 * `ptydeck`: the headless entry. Never imports electron.
 *
 * Only what every command needs is imported up front; the server (`serve`) and the MCP bridge (`mcp`)
 * load when asked for, so `token list` or `url` answer at once instead of loading node-pty, fastify
 * and the MCP SDK first.
 */
const USAGE = `usage: ptydeck <command>

  serve [--port N] [--host H] [--allowed-host NAME[:PORT]] [--tls-cert CERT.pem --tls-key KEY.pem] [--insecure]
                                                      serve the API and the viewer (default 127.0.0.1:8791); off
                                                      loopback it needs TLS (HTTPS and WSS) or --insecure
  url [--api]                                         a one-time login link to the running server's viewer; --api: its API base URL
  token                                               the running server's admin token (what an agent sends as Bearer)
  token create --name NAME                            create an agent token (printed once)
  token list                                          list agent tokens
  token revoke NAME                                   revoke an agent token and close its sockets
  list                                                list the running server's sessions
  mcp [--agent NAME]                                  MCP server on stdio, bridged to the running server
  remote add NAME URL --token T [--kind ptydeck|aio] [--insecure] [--ca CERT.pem]
                                                      show another ptydeck's (or an AIO sandbox's) terminals here;
                                                      --token-file FILE (- for stdin) keeps the token out of ps
  remote list                                         remotes, with their state when a server runs
  remote remove NAME                                  forget a remote (and its token)

environment: PTYDECK_HOME, PTYDECK_TOKEN, PTYDECK_PORT, AIO_SHELL_MAX_SESSIONS, AIO_SHELL_SESSION_TIMEOUT_SECS, AIO_SHELL_BACKEND`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'token':
      return token(rest);
    case 'list':
      return list();
    case 'mcp':
      return mcp(rest);
    case 'url':
      return url(rest);
    case 'remote': {
      const { remoteCommand } = await import('./remotes/cli');
      return remoteCommand(rest, USAGE);
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      return fail(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  }
}

function fail(message: string, code = 2): number {
  console.error(`ptydeck: ${message}`);
  return code;
}

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'allowed-host': { type: 'string', multiple: true },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      insecure: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const { ConfigError, loadConfig } = await import('./config');
  const { startPtydeck } = await import('./app');
  const { ServerRunningError } = await import('./server-lock');
  let config;
  try {
    // The admin token may come in the environment: read it once, and leave no trace of it there.
    config = loadConfig(
      {
        port: values.port,
        host: values.host,
        allowedHosts: values['allowed-host'],
        tlsCert: values['tls-cert'],
        tlsKey: values['tls-key'],
        insecure: values.insecure,
      },
      environmentWithSecretsTaken(),
    );
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.message);
    throw err;
  }
  if (!isLoopbackHost(config.host)) {
    console.warn(`ptydeck: WARNING: listening on ${config.host}, not loopback: anyone who can reach this address and holds a token gets a shell.`);
    if (!config.tls) console.warn('ptydeck: WARNING: --insecure: tokens cross the network in clear.');
  }
  let app;
  try {
    app = await startPtydeck(config);
  } catch (err) {
    if (err instanceof ServerRunningError) return fail(err.message, 1);
    throw err;
  }
  console.log(`ptydeck: serving the API at ${app.server.url}`);
  console.log(`ptydeck: credential and URL written to ${app.runtimeFile} (readable only by you)`);
  console.log(`ptydeck: open the viewer (this link works once, within a minute; \`ptydeck url\` prints a new one): ${app.loginLink()}`);
  let stopping = false;
  const running = app;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`ptydeck: ${signal}: ${describeShutdown(running.manager.shutdownPlan())}`);
    void running.stop().then(() => process.exit(0));
    // A teardown that hangs must not keep the server alive: the exit handler kills what is left.
    setTimeout(() => process.exit(0), 8000).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGHUP', () => stop('SIGHUP'));
  return new Promise<number>(() => undefined);
}

/** "ending 1 session (a); keeping 2 tmux sessions running (b, c): ..." — what a stop does, by name. */
export function describeShutdown(plan: { ending: { id: string }[]; kept: { id: string }[] }): string {
  const names = (list: { id: string }[]) => {
    const shown = list.slice(0, 8).map((s) => s.id);
    return shown.join(', ') + (list.length > shown.length ? `, and ${list.length - shown.length} more` : '');
  };
  const n = (count: number, what: string) => `${count} ${what}${count === 1 ? '' : 's'}`;
  const parts: string[] = [];
  const one = (list: unknown[], single: string, plural: string) => (list.length === 1 ? single : plural);
  if (plan.ending.length) parts.push(`ending ${n(plan.ending.length, 'session')} and ${one(plan.ending, 'its', 'their')} processes (${names(plan.ending)})`);
  if (plan.kept.length) {
    parts.push(`keeping ${n(plan.kept.length, 'tmux session')} running (${names(plan.kept)}): ${one(plan.kept, 'it comes', 'they come')} back when ptydeck starts again`);
  }
  return parts.length ? parts.join('; ') : 'stopping (no sessions open)';
}

async function url(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { api: { type: 'boolean' } }, strict: true });
  const server = await findRunningServer(defaultHome());
  if (!server.found) return fail(server.why, 1);
  if (values.api) {
    console.log(server.info.url);
    return 0;
  }
  // A one-time login link, minted by the server: the admin token never goes into a URL.
  const res = await fetch(`${server.info.url}/api/login-links`, { method: 'POST', headers: { Authorization: `Bearer ${server.info.token}` } }).catch(() => null);
  if (!res || !res.ok) return fail(`the server at ${server.info.url} did not give a login link${res ? ` (${res.status})` : ''}`, 1);
  console.log(((await res.json()) as { url: string }).url);
  return 0;
}

async function token(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined) {
    // The running server's admin token: it is the one that server accepts (PTYDECK_TOKEN may override the stored one).
    const server = await findRunningServer(defaultHome());
    if (!server.found) return fail(server.why, 1);
    console.log(server.info.token);
    return 0;
  }
  const home = ensureHome(defaultHome());
  const store = new TokenStore(home, process.env.PTYDECK_TOKEN || null);
  try {
    if (sub === 'create') {
      const { values } = parseArgs({ args: rest, options: { name: { type: 'string' } }, strict: true });
      if (!values.name) return fail('token create needs --name NAME');
      console.log(store.create(values.name).token);
      return 0;
    }
    if (sub === 'list') {
      for (const t of store.list()) console.log(`${t.name}\t${t.createdAt}`);
      return 0;
    }
    if (sub === 'revoke') {
      if (!rest[0]) return fail('token revoke needs a NAME');
      if (!store.revoke(rest[0])) return fail(`no token named ${JSON.stringify(rest[0])}`, 1);
      console.log(`revoked ${rest[0]}`);
      return 0;
    }
  } catch (err) {
    if (err instanceof TokenError) return fail(err.message, 1);
    throw err;
  }
  return fail(`token takes create, list or revoke (or nothing, for the admin token)\n\n${USAGE}`);
}

async function list(): Promise<number> {
  const server = await findRunningServer(defaultHome());
  if (!server.found) return fail(server.why, 1);
  const { url, token } = server.info;
  const res = await fetch(`${url}/v2/pty/sessions`, { headers: { Authorization: `Bearer ${token}` } }).catch(() => null);
  if (!res || !res.ok) return fail(`the server at ${url} did not answer${res ? ` (HTTP ${res.status})` : ''}`, 1);
  const body = (await res.json()) as { data: { sessions: Record<string, { owner: string; status: string; working_dir: string; current_command: string | null }> } };
  const rows = Object.entries(body.data.sessions);
  if (!rows.length) console.log('no sessions');
  for (const [id, s] of rows) console.log(`${id}\t${s.owner}\t${s.status}\t${s.working_dir}\t${s.current_command ?? ''}`);
  return 0;
}

async function mcp(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { agent: { type: 'string' }, url: { type: 'string' } }, strict: true });
  // An agent's own token if it has one; else the admin token from the runtime file, acting as --agent.
  const agentToken = process.env.PTYDECK_AGENT_TOKEN;
  let url = values.url ?? process.env.PTYDECK_URL;
  let token = agentToken;
  if (!url || !token) {
    const server = await findRunningServer(defaultHome());
    if (!server.found) return fail(`${server.why}; or set PTYDECK_URL and PTYDECK_AGENT_TOKEN`);
    url ??= server.info.url;
    token ??= server.info.token;
  }
  const { runMcpBridge } = await import('./mcp-bridge');
  await runMcpBridge({ url, token, agent: agentToken ? undefined : (values.agent ?? process.env.PTYDECK_AGENT_NAME ?? 'mcp') });
  return 0;
}

/** Runs the CLI and exits with its status; bin/ptydeck.js calls this. */
export function run(argv: string[]): void {
  main(argv).then(
    (code) => {
      if (code !== 0) process.exit(code);
    },
    (err) => {
      const e = err as NodeJS.ErrnoException;
      if (e?.code === 'EADDRINUSE') process.exit(fail(`port is already in use (${e.message}); pass --port N, or --port 0 for any free port`, 1));
      if (e?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || e?.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') process.exit(fail(e.message));
      console.error(err);
      process.exit(1);
    },
  );
}
