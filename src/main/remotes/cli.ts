import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { RemoteStatus } from '../../shared/types';
import { defaultHome, ensureHome } from '../home';
import { findRunningServer } from '../running-server';
import { fileSecretStore } from '../secret-store';
import { RemoteStore } from './store';
import { RemoteInputError } from './url-policy';

/**
 * `ptydeck remote add|list|remove`: edits `<home>/remotes.json` directly (a running server notices the
 * change within a second, as with `ptydeck token`). The token is stored and never printed again.
 */
export async function remoteCommand(args: string[], usage: string): Promise<number> {
  const [sub, ...rest] = args;
  const store = new RemoteStore(ensureHome(defaultHome()), fileSecretStore);
  try {
    switch (sub) {
      case 'add':
        return add(store, rest);
      case 'list':
        return await list(store);
      case 'remove': {
        if (!rest[0]) return fail('remote remove needs a NAME');
        if (!store.remove(rest[0])) return fail(`no remote named ${JSON.stringify(rest[0])}`, 1);
        console.log(`removed ${rest[0]}`);
        return 0;
      }
    }
  } catch (err) {
    if (err instanceof RemoteInputError) return fail(err.message, 1);
    throw err;
  }
  return fail(`remote needs add, list or remove\n\n${usage}`);
}

function add(store: RemoteStore, args: string[]): number {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      token: { type: 'string' },
      'token-file': { type: 'string' },
      kind: { type: 'string' },
      insecure: { type: 'boolean', default: false },
      ca: { type: 'string' },
    },
    strict: true,
  });
  const [name, url] = positionals;
  if (!name || !url || positionals.length > 2) return fail('remote add needs NAME and URL: ptydeck remote add NAME URL --token T [--kind ptydeck|aio]');
  let token = values.token;
  if (values['token-file']) token = readFileSync(values['token-file'] === '-' ? 0 : values['token-file'], 'utf8').trim();
  if (!token) return fail('remote add needs --token T (or --token-file FILE, - for stdin): the remote\'s person (admin) token for a ptydeck, its API key for an aio endpoint');
  const kind = values.kind ?? 'ptydeck';
  if (kind !== 'ptydeck' && kind !== 'aio') return fail(`--kind must be ptydeck or aio (got ${JSON.stringify(kind)})`);
  const ca = values.ca ? readFileSync(values.ca, 'utf8') : undefined;
  const entry = store.add({ name, url, token, kind, insecure: values.insecure, ca });
  console.log(`added ${entry.name}: ${entry.kind} at ${entry.url} (token ${entry.tokenHint})${entry.insecure ? ' — insecure: the token crosses the network in clear' : ''}`);
  return 0;
}

async function list(store: RemoteStore): Promise<number> {
  const entries = store.list();
  if (!entries.length) {
    console.log('no remotes');
    return 0;
  }
  const live = await liveStatuses();
  for (const e of entries) {
    const s = live?.get(e.name);
    const state = s ? `${s.state}${s.reason ? ` (${s.reason})` : ''}${s.state === 'online' ? `, ${s.sessions} session(s)` : ''}` : live ? 'not loaded yet' : 'no server running';
    console.log(`${e.name}\t${e.kind}\t${e.url}\ttoken ${e.tokenHint}${e.insecure ? '\tinsecure' : ''}\t${state}`);
  }
  return 0;
}

/** The running server's view of its remotes, if one answers quickly. */
async function liveStatuses(): Promise<Map<string, RemoteStatus> | null> {
  const server = await findRunningServer(defaultHome());
  if (!server.found) return null;
  const info = server.info;
  try {
    const res = await fetch(`${info.url}/api/remotes`, { headers: { Authorization: `Bearer ${info.token}` }, signal: AbortSignal.timeout(LiveStatusTimeoutMs) });
    if (!res.ok) return null;
    const body = (await res.json()) as { remotes: RemoteStatus[] };
    return new Map(body.remotes.map((r) => [r.name, r]));
  } catch {
    return null;
  }
}

/** `remote list` asks the running server for states; it answers at once or not at all. */
const LiveStatusTimeoutMs = 2000;

function fail(message: string, code = 2): number {
  console.error(`ptydeck: ${message}`);
  return code;
}
