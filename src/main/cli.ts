import { parseArgs } from 'node:util';
import { isIP } from 'node:net';
import { ConfigError, defaultHome, loadConfig } from './config';
import { TokenError, TokenStore } from './api/auth';
import { startPtydeck } from './app';
import { ensureHome, readRuntimeFile, runtimeFilePath } from './home';
import { runMcpBridge } from './mcp-bridge';
import { environmentWithSecretsTaken } from './secret-env';

/**
 * `ptydeck`: the headless entry. Never imports electron.
 *
 *   ptydeck serve [--port N] [--host H] [--allowed-host NAME]   serve the API and the viewer
 *   ptydeck token create --name NAME | token list | token revoke NAME
 *   ptydeck list                                                sessions of the running server
 *   ptydeck url                                                 a one-time login link to the viewer
 *   ptydeck mcp [--agent NAME]                                  MCP on stdio, bridged to the running server
 */
const USAGE = `usage: ptydeck <command>

  serve [--port N] [--host H] [--allowed-host NAME]   serve the API and the viewer (default 127.0.0.1:8791)
  token create --name NAME                            create an agent token (printed once)
  token list                                          list agent tokens
  token revoke NAME                                   revoke an agent token and close its sockets
  list                                                list the running server's sessions
  mcp [--agent NAME]                                  MCP server on stdio, bridged to the running server
  url                                                 print a one-time login link to the running server's viewer

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
      return url();
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
    options: { port: { type: 'string' }, host: { type: 'string' }, 'allowed-host': { type: 'string', multiple: true } },
    strict: true,
  });
  // The admin token may come in the environment: read it once, and leave no trace of it there.
  const config = loadConfig({ port: values.port, host: values.host, allowedHosts: values['allowed-host'] }, environmentWithSecretsTaken());
  if (!isLoopback(config.host)) {
    console.warn(`ptydeck: WARNING: listening on ${config.host}, not loopback: anyone who can reach this address and holds a token gets a shell.`);
  }
  const app = await startPtydeck(config);
  console.log(`ptydeck: serving the API at ${app.server.url}`);
  console.log(`ptydeck: credential and URL written to ${app.runtimeFile} (readable only by you)`);
  console.log(`ptydeck: open the viewer (this link works once, within a minute; \`ptydeck url\` prints a new one): ${app.loginLink()}`);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    console.log(`ptydeck: ${signal}: closing ${app.manager.size} session(s)`);
    void app.stop().then(() => process.exit(0));
    // A teardown that hangs must not keep the server alive: the exit handler kills what is left.
    setTimeout(() => process.exit(0), 8000).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGHUP', () => stop('SIGHUP'));
  return new Promise<number>(() => undefined);
}

function token(args: string[]): number {
  const [sub, ...rest] = args;
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
  return fail(`token needs create, list or revoke\n\n${USAGE}`);
}

/** Asks the running server for a one-time login link (the admin token never goes into a URL). */
async function url(): Promise<number> {
  const info = readRuntimeFile(defaultHome());
  if (!info) return fail(`no running server found (${runtimeFilePath(defaultHome())} is missing)`);
  const res = await fetch(`${info.url}/api/login-links`, { method: 'POST', headers: { Authorization: `Bearer ${info.token}` } }).catch(() => null);
  if (!res || !res.ok) return fail(`the server at ${info.url} did not answer`, 1);
  console.log(((await res.json()) as { url: string }).url);
  return 0;
}

async function list(): Promise<number> {
  const info = readRuntimeFile(defaultHome());
  if (!info) return fail(`no running server found (${runtimeFilePath(defaultHome())} is missing)`);
  const res = await fetch(`${info.url}/v2/pty/sessions`, { headers: { Authorization: `Bearer ${info.token}` } }).catch(() => null);
  if (!res || !res.ok) return fail(`the server at ${info.url} did not answer`, 1);
  const body = (await res.json()) as { data: { sessions: Record<string, { owner: string; status: string; working_dir: string; current_command: string | null }> } };
  const rows = Object.entries(body.data.sessions);
  if (!rows.length) console.log('no sessions');
  for (const [id, s] of rows) console.log(`${id}\t${s.owner}\t${s.status}\t${s.working_dir}\t${s.current_command ?? ''}`);
  return 0;
}

async function mcp(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { agent: { type: 'string' }, url: { type: 'string' } }, strict: true });
  const info = readRuntimeFile(defaultHome());
  const url = values.url ?? process.env.PTYDECK_URL ?? info?.url;
  // An agent's own token if it has one; else the admin token from the runtime file, acting as --agent.
  const agentToken = process.env.PTYDECK_AGENT_TOKEN;
  const token = agentToken || info?.token;
  if (!url || !token) return fail(`no running server found (${runtimeFilePath(defaultHome())} is missing): start one with \`ptydeck serve\` or set PTYDECK_URL and PTYDECK_AGENT_TOKEN`);
  await runMcpBridge({ url, token, agent: agentToken ? undefined : (values.agent ?? process.env.PTYDECK_AGENT_NAME ?? 'mcp') });
  return 0;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/** Runs the CLI and exits with its status; bin/ptydeck.js calls this. */
export function run(argv: string[]): void {
  main(argv).then(
    (code) => {
      if (code !== 0) process.exit(code);
    },
    (err) => {
      if (err instanceof ConfigError) process.exit(fail(err.message));
      const e = err as NodeJS.ErrnoException;
      if (e?.code === 'EADDRINUSE') process.exit(fail(`port is already in use (${e.message}); pass --port N, or --port 0 for any free port`, 1));
      if (e?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || e?.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') process.exit(fail(e.message));
      console.error(err);
      process.exit(1);
    },
  );
}
