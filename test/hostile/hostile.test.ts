import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, sleep, until, type TestServer } from '../helpers';
import { allPids, commandLine } from '../../src/main/terminal/processes';
import { generateCookieCase, isEscapeMark, judgeCookieCase, PSEUDO_CREATIONS, QUERY_FLOOD, type ViewerCredentials } from './control-gen';
import { BASH_SINK_COMMAND, generateHttpCase, SINK_PROGRAM, SNAPSHOT_CONTENT, SNAPSHOT_FILE } from './http-gen';
import { isSentinelReply, judgeFrameReplies, judgeHttp, judgeRawResponse, judgeUpgrade, sentinelFrame } from './judge';
import { firstDifference, LiveSession, liveProgram } from './live';
import { describeRequest, errorMessage, Tally, type Violation } from './oracle';
import { Rng, seedFromEnv } from './prng';
import {
  closeAgent,
  closeCodeOf,
  decodeFrames,
  encodeFrame,
  hold,
  httpSend,
  parseHttpResponse,
  rawExchange,
  Sock,
  upgradeExchange,
  upgradeRequest,
  type Held,
} from './transport';
import { aioFrame, deckFrame, eventsFrame, execdFrame, generateUpgradeCase, viewerFrame, type FrameCase, type Protocol, type UpgradeWorld } from './ws-gen';

/**
 * Hostile input against a running server with live sessions whose output is checked byte for byte.
 *
 * Three live sessions (one on each streaming door, owned by the admin and by the agent "alice") print a
 * deterministic sequence in bursts for the whole attack while the agent "mallory", no credential, bad
 * credentials and (on sacrificial sessions only) the admin send thousands of generated hostile requests,
 * WebSocket frames and raw socket abuses. Then: no 5xx, no 1011, no hang, no crash; every refusal says
 * what was wrong in its door's dialect; a foreign Host or Origin is 403 and nothing else; memory stays
 * bounded; the live output is exactly what the programs printed; /health and a normal exec still work.
 *
 * Reproduce: the seed is printed with the counts and in every failure (`seed=… http#N …`);
 * `HOSTILE_SEED=<seed> HOSTILE_ONLY=http#N npx vitest run test/hostile` replays one case.
 */
const SEED = seedFromEnv();
const ONLY = process.env.HOSTILE_ONLY ?? null;
const root = new Rng(SEED);
const N = {
  http: Number(process.env.HOSTILE_HTTP ?? 1700),
  cookies: Number(process.env.HOSTILE_COOKIES ?? 150),
  upgrades: Number(process.env.HOSTILE_UPGRADES ?? 160),
  httpWorkers: 8,
  upgradeWorkers: 4,
  burstLines: 75,
  burstEveryMs: 150,
};
const LIMITS = {
  bodyBytes: 1024 * 1024,
  inputBytes: 8192,
  wsFrameBytes: 64 * 1024,
  sockets: 24,
  createsPerMinute: 30,
  maxSessions: 48,
  /** mallory holds 17 sessions from setup on: room for her creations, and a quota she can hit. */
  sessionsPerAgent: 24,
  /**
   * The server's defaults: a trickling body is cut after this (the attack usually runs longer; see
   * releaseStalls). Not shorter: on a starved machine the event loop can stall for seconds, and a
   * deadline near that would cut honest requests whose bytes sat unread.
   */
  bodyTimeoutMs: 30_000,
  headersTimeoutMs: 15_000,
  unauthenticatedConnections: 48,
};
/**
 * Memory, two bounds, both measured on this whole process (vitest worker + server + clients).
 *
 * RSS_GROWTH_BOUND, the peak during the attack over a baseline taken after setup and a full GC. The
 * attack pushes ~120-200 MiB of bodies and frames through (printed with the counts): ~8% of HTTP bodies
 * are 100 KB-900 KB strings, each copied a few times on both sides (client string and Buffer, server
 * Buffer, decoded string, parsed object) by 8 concurrent workers, i.e. ~40 MiB in flight, plus garbage
 * the GC has not collected yet (V8 lets old space grow to a multiple of its last live size before a
 * major GC; observed peaks 90-165 MiB), plus new sessions' screen mirrors and socket buffers. 320 MiB is
 * about twice the worst peak seen on this machine: it tolerates a lazy GC, and still fails if the
 * server buffered output or bodies without limit (a stalled reader, a half frame, a slow body).
 *
 * RETAINED_BOUND, what is still alive after the attack, once mallory's sessions are closed and a full GC
 * ran: the admin's sessions created during the attack (at most ~15 at the creation rate limit, each a
 * log and a small headless screen of a few hundred KiB), the live logs (~0.5 MiB) and new tokens.
 * 48 MiB; a server that kept each request's body, each closed socket, or a listener per request would
 * exceed it (the traffic is several times larger).
 */
const RSS_GROWTH_BOUND = 320 * 1024 * 1024;
const RETAINED_BOUND = 48 * 1024 * 1024;

let srv: TestServer;
let tmp: string;
let world: UpgradeWorld;
let viewerSink: string;
let tokens: { admin: string; mallory: string; alice: string; carol: string };
let viewer: ViewerCredentials;
let floodId: string;
let savedEnvToken: string | undefined;
const tally = new Tally();
const lives: LiveSession[] = [];
const stalls: { name: string; held: Held; mustBeCut?: number; stop?: () => void }[] = [];
const rss = { baseline: 0, max: 0, samples: 0, heapBaseline: 0, heapAfter: 0 };
/** A full GC on demand (vitest's worker is not started with --expose-gc, so the flag is set at run time). */
const gc: () => void = (() => {
  try {
    setFlagsFromString('--expose_gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return () => undefined;
  }
})();
const liveBytes = (): number => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};
/**
 * A "hang" is judged with generous deadlines (HANG_MS), never tight ones: the machine is shared and
 * noisy. The event loop's lag and this process's CPU share are reported beside the counts, so that a
 * reported hang can be told apart from a starved machine.
 */
const HANG_MS = 60_000;
const loop = { maxLagMs: 0, lagOver1s: 0, cpuShare: 0 };
let leakedAnonymous = 0;
/**
 * The server runs in this process: an exception nothing caught is a crash of the real server (the CLI and
 * Electron install no handler, so the process exits and every session dies with it). This listener keeps
 * the worker alive to finish the run and records each one; the attack test then fails, naming them.
 */
const crashes: string[] = [];
const onUncaught = (err: unknown): void => {
  const e = err as NodeJS.ErrnoException;
  crashes.push(`${e?.code ?? e?.name ?? 'Error'}: ${e?.message ?? String(err)}`);
};
process.on('uncaughtException', onUncaught);
let attackSeconds = 0;

const wsUrl = () => srv.wsUrl;
const secrets = () => ({ admin: tokens.admin, mallory: tokens.mallory, alice: tokens.alice });
const only = (id: string): boolean => ONLY === null || ONLY === id;
const reproduce = (id: string): string => `HOSTILE_SEED=0x${SEED.toString(16)} HOSTILE_ONLY=${id}`;

async function api(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  return srv.api(method, path, body, { token });
}

async function created(r: { status: number; body: any }, what: string): Promise<string> {
  if (r.status >= 300) throw new Error(`setup: ${what} failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.session_id ?? r.body.data?.session_id ?? r.body.session?.id;
}

async function openOrThrow(url: string, headers: Record<string, string>, what: string): Promise<Sock> {
  const r = await Sock.open(url, headers);
  if ('failure' in r) throw new Error(`setup: ${what} refused: ${JSON.stringify(r.failure)}`);
  return r.sock;
}

async function waitText(live: LiveSession, text: string, ms = 30_000): Promise<void> {
  const ok = await until(() => live.received().includes(text), ms, 20);
  if (!ok) throw new Error(`setup: live session ${live.label} never printed ${text}; received ${JSON.stringify(live.received().slice(-300))}`);
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'ptydeck-hostile-'));
  srv = await startTestServer({
    PTYDECK_MAX_BODY_BYTES: String(LIMITS.bodyBytes),
    PTYDECK_MAX_INPUT_BYTES: String(LIMITS.inputBytes),
    PTYDECK_MAX_WS_FRAME_BYTES: String(LIMITS.wsFrameBytes),
    PTYDECK_MAX_SOCKETS: String(LIMITS.sockets),
    PTYDECK_MAX_CREATES_PER_MINUTE: String(LIMITS.createsPerMinute),
    AIO_SHELL_MAX_SESSIONS: String(LIMITS.maxSessions),
    PTYDECK_MAX_SESSIONS_PER_AGENT: String(LIMITS.sessionsPerAgent),
    PTYDECK_BODY_TIMEOUT_MS: String(LIMITS.bodyTimeoutMs),
    PTYDECK_HEADERS_TIMEOUT_MS: String(LIMITS.headersTimeoutMs),
    PTYDECK_MAX_UNAUTHENTICATED_CONNECTIONS: String(LIMITS.unauthenticatedConnections),
    // Sessions created without a cwd start in the scratch directory, never in the user's home.
    PTYDECK_CWD: tmp,
  });
  const mint = async (name: string) => {
    const r = await srv.api('POST', '/api/tokens', { name });
    if (r.status !== 201) throw new Error(`setup: token ${name}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.token as string;
  };
  tokens = { admin: srv.token, mallory: await mint('mallory'), alice: await mint('alice'), carol: await mint('carol') };
  // The server's own environment holds the admin token, as it does when PTYDECK_TOKEN starts a server
  // that cannot scrub it: a $VAR expanded from there would leak it (the paths family looks for that).
  savedEnvToken = process.env.PTYDECK_TOKEN;
  process.env.PTYDECK_TOKEN = tokens.admin;
  symlinkSync('/proc/self', join(tmp, 'link-to-proc'));
  // The person's viewer session (cookie and key), for the cookie families.
  const login = await fetch(`${srv.url}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: tokens.admin }) });
  if (login.status !== 200) throw new Error(`setup: viewer login: ${login.status}`);
  const hmac = createHmac('sha256', tokens.admin).update('ptydeck viewer cookie v1').digest('base64url');
  viewer = {
    cookie: (login.headers.get('set-cookie') ?? '').split(';')[0],
    key: ((await login.json()) as { key: string }).key,
    fixedCookies: [`ptydeck_viewer=${hmac}`, `ptydeck_viewer_${srv.port}=${hmac}`],
    origin: srv.url,
  };
  const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });

  // Live A: the session's own command on the execd door (owner: admin), watched by an execd socket.
  const idA = await created(await api(tokens.admin, 'POST', '/pty', { cwd: tmp, command: liveProgram('A') }), 'live A');
  const a = new LiveSession(idA, 'A', 'execd', 'admin', await openOrThrow(`${wsUrl()}/pty/${idA}/ws`, { 'X-EXECD-ACCESS-TOKEN': tokens.admin }, 'live A watcher'));
  // Live B: an AIO v2 shell owned by alice, watched by her AIO binary socket; the program runs as an exec.
  await created(await api(tokens.alice, 'POST', '/v2/pty/sessions', { id: 'live-b', cwd: tmp }), 'live B');
  const b = new LiveSession('live-b', 'B', 'aio-binary', 'alice', await openOrThrow(`${wsUrl()}/v2/pty/sessions/live-b/ws?protocol=binary`, bearer(tokens.alice), 'live B watcher'));
  // Live C: an AIO v1 session owned by the admin, watched by the admin's AIO json socket on /v1/shell/ws.
  await created(await api(tokens.admin, 'POST', '/v1/shell/sessions/create', { id: 'live-c', exec_dir: tmp }), 'live C');
  const c = new LiveSession('live-c', 'C', 'aio-json', 'admin', await openOrThrow(`${wsUrl()}/v1/shell/ws?session_id=live-c`, bearer(tokens.admin), 'live C watcher'));
  for (const l of [b, c]) if ((await l.watcher.waitFor((f) => f.json?.type === 'ready')) < 0) throw new Error(`setup: no ready on ${l.id}`);
  const execB = await api(tokens.alice, 'POST', '/v2/pty/sessions/live-b/exec', { command: liveProgram('B'), async: true });
  const execC = await api(tokens.admin, 'POST', '/v1/shell/exec', { id: 'live-c', command: liveProgram('C'), async_mode: true });
  if (execB.status !== 200 || execC.status !== 200) throw new Error(`setup: live programs: ${JSON.stringify([execB.body, execC.body])}`);
  lives.push(a, b, c);
  for (const l of lives) await waitText(l, `READY-${l.label}\r\n`);

  // Sacrificial sessions: sinks (cat in raw mode: any byte may be typed), interactive shells (safe
  // commands only) and lazy "doomed" sessions that destructive requests may close.
  const sink = (token: string) => api(token, 'POST', '/pty', { cwd: tmp, command: SINK_PROGRAM }).then((r) => created(r, 'sink'));
  const lazy = (token: string) => api(token, 'POST', '/pty', { cwd: tmp }).then((r) => created(r, 'doomed'));
  const shell = (token: string) => api(token, 'POST', '/v2/pty/sessions', { cwd: tmp }).then((r) => created(r, 'interactive'));
  const mSinks = [];
  for (let i = 0; i < 6; i++) mSinks.push(await sink(tokens.mallory));
  const aSinks = [];
  for (let i = 0; i < 4; i++) aSinks.push(await sink(tokens.admin));
  viewerSink = aSinks.shift()!;
  const mShells = [await shell(tokens.mallory), await shell(tokens.mallory)];
  const aShells = [await shell(tokens.admin), await shell(tokens.admin)];
  const mDoomed = [];
  for (let i = 0; i < 8; i++) mDoomed.push(await lazy(tokens.mallory));
  // A program that floods its terminal with queries and never reads the answers, for the whole attack.
  floodId = await shell(tokens.mallory);
  const flood = await api(tokens.mallory, 'POST', `/v2/pty/sessions/${floodId}/exec`, { command: QUERY_FLOOD, async: true });
  if (flood.status !== 200) throw new Error(`setup: query flood: ${JSON.stringify(flood.body)}`);
  const aDoomed = [];
  for (let i = 0; i < 6; i++) aDoomed.push(await lazy(tokens.admin));
  // The viewer's sink lets the person type (its input then reaches cat).
  await api(tokens.admin, 'POST', `/api/sessions/${viewerSink}/floor`, { mode: 'type' });
  // Bash-API sessions whose running command swallows whatever is written to its stdin.
  const bashSink = (token: string) => api(token, 'POST', '/v1/bash/exec', { command: BASH_SINK_COMMAND, async_mode: true, exec_dir: tmp }).then((r) => created(r, 'bash sink'));
  const mBash = [await bashSink(tokens.mallory), await bashSink(tokens.mallory), await bashSink(tokens.mallory)];
  const aBash = [await bashSink(tokens.admin), await bashSink(tokens.admin)];
  writeFileSync(join(tmp, SNAPSHOT_FILE), SNAPSHOT_CONTENT);

  const live = lives.map((l) => l.id);
  const enc = encodeURIComponent;
  world = {
    port: srv.port,
    tokens: { admin: tokens.admin, mallory: tokens.mallory },
    tmp,
    user: userInfo().username,
    bodyLimit: LIMITS.bodyBytes,
    inputLimit: LIMITS.inputBytes,
    live,
    liveVariants: live.flatMap((id) => [`${enc(id)}%00`, enc(id.toUpperCase()), `${enc(id)}%20`, `${enc(id)}%2F..`, `..%2F${enc(id)}`, `${enc(id)}x`, enc(id.slice(0, -1)), `%2e%2e%2F${enc(id)}`]),
    mallory: { sinks: mSinks, interactive: mShells, doomed: mDoomed, bash: mBash },
    admin: { sinks: aSinks, interactive: aShells, doomed: aDoomed, bash: aBash },
    // M0-M3 are held by the frame sweep's sockets; M4 and M5 are free for second sockets and takeovers.
    freeMallorySinks: mSinks.slice(4),
    viewer,
  };
}, 120_000);

afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  if (savedEnvToken === undefined) delete process.env.PTYDECK_TOKEN;
  else process.env.PTYDECK_TOKEN = savedEnvToken;
  for (const s of stalls) s.held.release();
  for (const l of lives) l.watcher.close();
  closeAgent();
  const total = Object.values(tally.tried).reduce((x, y) => x + y, 0);
  // The counts, whatever happened.
  console.log(
    '\n' +
      tally.table(SEED, {
        'live sessions': lives.map((l) => `${l.label} (${l.kind}, owner ${l.owner}): ${l.lines} lines in ${l.bursts} bursts`).join('; '),
        memory: `rss baseline ${(rss.baseline / 2 ** 20).toFixed(0)} MiB, peak growth ${((rss.max - rss.baseline) / 2 ** 20).toFixed(0)} MiB over ${rss.samples} samples (bound ${RSS_GROWTH_BOUND / 2 ** 20} MiB); live heap+external after a full GC grew ${((rss.heapAfter - rss.heapBaseline) / 2 ** 20).toFixed(1)} MiB (bound ${RETAINED_BOUND / 2 ** 20} MiB); ${(tally.bytesSent / 2 ** 20).toFixed(0)} MiB of hostile bodies and frames sent`,
        'attack duration': `${attackSeconds.toFixed(1)} s; event loop max lag ${loop.maxLagMs} ms (${loop.lagOver1s} lags over 1 s); this process used ${(loop.cpuShare * 100).toFixed(0)}% of one core (2 shared cores; a low share with long lags means a starved machine)`,
        'stalled sockets held through the attack': stalls.length,
        'anonymous /v2/pty/ws sessions left without a socket (D4)': leakedAnonymous,
        'uncaught exceptions (server crashes)': crashes.length ? `${crashes.length}: ${[...new Set(crashes)].join(' | ')}` : 0,
        'total tried': total,
      }),
  );
  try {
    await srv?.close();
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}, 60_000);

// ---------------------------------------------------------------- lanes

async function pool<T>(items: T[], workers: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < items.length) await run(items[next++]);
    }),
  );
}

async function httpLane(): Promise<void> {
  const indexes = Array.from({ length: N.http }, (_, i) => i).filter((i) => only(`http#${i}`));
  await pool(indexes, N.httpWorkers, async (i) => {
    const c = generateHttpCase(i, root, world);
    const t0 = Date.now();
    tally.bytesSent += c.req.body?.length ?? 0;
    const res = await httpSend(srv.port, c.req, HANG_MS);
    const where = `seed=0x${SEED.toString(16)} ${c.id} (${c.who}, ${c.route}) [${reproduce(c.id)}]: ${describeRequest(c.req, secrets())}`;
    tally.latency('http', Date.now() - t0, where);
    judgeHttp(c, res, tally, where);
    judgeControl(c.req, c.who, res, where);
  });
}

/** What issue 11's families add to every answer: no server secret in it, no word of another's id. */
function judgeControl(req: { method: string; path: string; body?: Buffer }, who: string, res: { status: number; text: string }, where: string): void {
  tally.check('no server secret in any answer');
  if (res.text.includes(tokens.admin) && !/^\/api\/login-links/.test(req.path)) tally.violate('secret-leak', where, `the answer holds the admin token: ${res.text.slice(0, 200)}`);
  if (who !== 'mallory' || req.method !== 'POST' || res.status !== 400 || !req.body) return;
  let id: unknown;
  try {
    id = (JSON.parse(req.body.toString('utf8')) as { id?: unknown }).id;
  } catch {
    return;
  }
  if (typeof id !== 'string' || !world.live.includes(id)) return;
  tally.check("another's id answers as any unavailable one");
  if (/another principal|in use|exists|alice|admin/i.test(res.text)) tally.violate('existence-oracle', where, `creating with another principal's id says so: ${res.text.slice(0, 200)}`);
}

/** The viewer-cookie families, one request at a time after the attack, so that no other lane's sessions are counted. */
async function cookieLane(): Promise<void> {
  for (let i = 0; i < N.cookies; i++) {
    const id = `cookie#${i}`;
    if (!only(id)) continue;
    const c = generateCookieCase(i, root, srv.port, viewer);
    const before = srv.app.manager.size;
    const res = await httpSend(srv.port, c.req, HANG_MS);
    const where = `seed=0x${SEED.toString(16)} ${id} (${c.variant}) [${reproduce(id)}]: ${describeRequest(c.req, secrets())}`;
    judgeCookieCase(c, res, Math.max(0, srv.app.manager.size - before), tally, where);
    judgeControl(c.req, 'admin', res, where);
  }
}

interface SocketPlan {
  name: string;
  proto: Protocol;
  url: () => string;
  headers: () => Record<string, string>;
  count: number;
  frame: (rng: Rng) => FrameCase;
}

const greeting: Record<Protocol, string> = { aio: 'ready', execd: 'connected', viewer: 'snapshot', events: 'hello', deck: 'deck' };

async function openPlanned(plan: SocketPlan): Promise<Sock | null> {
  // A just-closed socket may still hold the session for a moment (4409 / 409): retry briefly.
  for (let attempt = 0; attempt < 20; attempt++) {
    const r = await Sock.open(plan.url(), plan.headers(), HANG_MS);
    if ('sock' in r) {
      const at = await r.sock.waitFor((f) => f.json?.type === greeting[plan.proto] || f.json?.type === 'error', 0, HANG_MS);
      if (at >= 0 && r.sock.frames[at].json.type === greeting[plan.proto]) return r.sock;
      r.sock.close();
      tally.note(`${plan.name}: reopen attempt ${attempt} refused: ${JSON.stringify(r.sock.frames[at]?.json ?? r.sock.closed)}`);
    } else if (r.failure.status !== 409 && r.failure.status !== 429) {
      tally.violate('reopen-failed', plan.name, `could not reopen: ${JSON.stringify(r.failure).slice(0, 300)}`);
      return null;
    } else if (r.failure.status === 429) {
      // The creation rate limit said how long to wait ("retry in Ns"): a lane that makes a session per
      // socket may well drain its budget; waiting as told is what a client should do.
      const secs = Number(/retry in (\d+)s/.exec(JSON.stringify(r.failure))?.[1] ?? 2);
      await sleep(secs * 1000 + 100);
      continue;
    }
    await sleep(100);
  }
  tally.violate('reopen-failed', plan.name, 'could not reopen after 20 attempts');
  return null;
}

async function frameLane(plan: SocketPlan): Promise<void> {
  let sock: Sock | null = null;
  for (let i = 0; i < plan.count; i++) {
    const id = `${plan.name}#${i}`;
    if (!only(id)) continue;
    const c = plan.frame(root.fork(plan.name, i));
    const shown = c.binary ? `binary ${(c.data as Buffer).length}B ${(c.data as Buffer).subarray(0, 24).toString('hex')}` : `text ${JSON.stringify(String(c.data).slice(0, 160))}${String(c.data).length > 160 ? `… (${String(c.data).length} chars)` : ''}`;
    const where = `seed=0x${SEED.toString(16)} ${id} [${reproduce(id)}] on ${plan.url().replace(srv.wsUrl, '')}: ${c.note}: ${shown}`;
    if (!sock || !sock.isOpen) {
      const t0 = Date.now();
      sock = await openPlanned(plan);
      tally.latency('reopen', Date.now() - t0, `${plan.name} before ${id}`);
    }
    if (!sock) return;
    tally.try('wsFrame');
    const mark = sock.frames.length;
    tally.bytesSent += typeof c.data === 'string' ? Buffer.byteLength(c.data) : c.data.length;
    sock.send(c.data, c.binary);
    if (c.expect === 'close') {
      const closed = await sock.waitClose(HANG_MS);
      if (!closed) {
        tally.other('wsFrame', 'hang');
        tally.violate('hang', where, `expected close ${c.closeCode}, the socket stayed open for ${HANG_MS / 1000} s (event loop max lag so far ${loop.maxLagMs} ms)`);
        sock.terminate();
      } else {
        tally.close(closed.code);
        if (closed.code === 1011) tally.violate('server-error', where, 'closed with 1011');
        else if (closed.code !== c.closeCode) tally.note(`${where}: closed with ${closed.code}, expected ${c.closeCode}`);
        tally.reject('wsFrame', `close ${closed.code}`, closed.code === 1009 ? 'too large' : closed.code === 1007 ? 'invalid UTF-8' : 'ws protocol');
      }
      sock = null;
      continue;
    }
    if (plan.proto === 'events') {
      // One-way socket: nothing comes back; it must simply stay open.
      await sleep(2);
      if (!sock.isOpen) {
        const closed = await sock.waitClose(1000);
        if (closed) tally.close(closed.code);
        tally.violate(closed?.code === 1011 ? 'server-error' : 'ws-closed-unexpectedly', where, `events socket closed: ${JSON.stringify(closed)}`);
        sock = null;
      } else tally.accept('wsFrame', 'no reply');
      continue;
    }
    const token = `sentinel-${plan.name}-${i}`;
    tally.sentinels++;
    const t0 = Date.now();
    sock.send(sentinelFrame(plan.proto, token));
    const at = await sock.waitFor(isSentinelReply(plan.proto, token), mark, HANG_MS);
    tally.latency('frame', Date.now() - t0, where);
    if (at === -2) {
      tally.other('wsFrame', 'hang');
      tally.violate('hang', where, `no answer to the following sentinel frame within ${HANG_MS / 1000} s (event loop max lag so far ${loop.maxLagMs} ms)`);
      sock.terminate();
      sock = null;
      continue;
    }
    if (at === -1) {
      const closed = sock.closed!;
      tally.close(closed.code);
      tally.other('wsFrame', `closed ${closed.code}`);
      tally.violate(closed.code === 1011 ? 'server-error' : 'ws-closed-unexpectedly', where, `socket closed ${closed.code} ${closed.reason}; last frames ${JSON.stringify(sock.frames.slice(-3).map((f) => f.json ?? '<binary>')).slice(0, 200)}`);
      sock = null;
      continue;
    }
    judgeFrameReplies(plan.proto, c, sock.frames.slice(mark, at), tally, where);
  }
  if (sock) {
    sock.close();
    const closed = await sock.waitClose(5000);
    if (closed) tally.close(closed.code);
  }
}

function socketPlans(): SocketPlan[] {
  const w = world;
  const bearer = (t: string) => () => ({ Authorization: `Bearer ${t}` });
  const lim = LIMITS.wsFrameBytes;
  const [m0, m1, m2, m3] = w.mallory.sinks;
  return [
    { name: 'aio-json', proto: 'aio', url: () => `${wsUrl()}/v2/pty/sessions/${m0}/ws`, headers: bearer(tokens.mallory), count: 140, frame: (r) => aioFrame(r, { sink: true, frameLimit: lim }) },
    { name: 'aio-binary', proto: 'aio', url: () => `${wsUrl()}/v2/pty/sessions/${m1}/ws?protocol=binary`, headers: bearer(tokens.mallory), count: 110, frame: (r) => aioFrame(r, { sink: true, frameLimit: lim }) },
    { name: 'execd', proto: 'execd', url: () => `${wsUrl()}/pty/${m2}/ws`, headers: () => ({ 'X-EXECD-ACCESS-TOKEN': tokens.mallory }), count: 170, frame: (r) => execdFrame(r, { frameLimit: lim }) },
    { name: 'viewer', proto: 'viewer', url: () => `${wsUrl()}/api/sessions/${viewerSink}/view`, headers: bearer(tokens.admin), count: 150, frame: (r) => viewerFrame(r, { frameLimit: lim }) },
    { name: 'events', proto: 'events', url: () => `${wsUrl()}/api/events`, headers: bearer(tokens.mallory), count: 50, frame: (r) => eventsFrame(r, { frameLimit: lim }) },
    { name: 'v1-ws', proto: 'aio', url: () => `${wsUrl()}/v1/shell/ws?session_id=${m3}`, headers: () => ({ 'x-api-key': tokens.mallory }), count: 60, frame: (r) => aioFrame(r, { sink: true, frameLimit: lim }) },
    // Sockets on interactive shells get only frames that must be refused (nothing typed reaches bash).
    { name: 'v1-ws-new', proto: 'aio', url: () => `${wsUrl()}/v1/shell/ws`, headers: bearer(tokens.mallory), count: 30, frame: (r) => aioFrame(r, { sink: false, frameLimit: lim }) },
    { name: 'v2-anon', proto: 'aio', url: () => `${wsUrl()}/v2/pty/ws?api_key=${encodeURIComponent(tokens.mallory)}`, headers: () => ({}), count: 30, frame: (r) => aioFrame(r, { sink: false, frameLimit: lim }) },
    { name: 'deck', proto: 'deck', url: () => `${wsUrl()}/api/deck`, headers: bearer(tokens.admin), count: 80, frame: (r) => deckFrame(r, { frameLimit: lim, ids: [...w.live, ...w.admin.sinks, ...w.mallory.sinks] }) },
    { name: 'admin-aio', proto: 'aio', url: () => `${wsUrl()}/v2/pty/sessions/${w.admin.sinks[0]}/ws?protocol=binary`, headers: bearer(tokens.admin), count: 60, frame: (r) => aioFrame(r, { sink: true, frameLimit: lim }) },
  ];
}

async function upgradeLane(): Promise<void> {
  const indexes = Array.from({ length: N.upgrades }, (_, i) => i).filter((i) => only(`upgrade#${i}`));
  await pool(indexes, N.upgradeWorkers, async (i) => {
    const c = generateUpgradeCase(i, root, world);
    const t0 = Date.now();
    const out = await upgradeExchange(srv.port, upgradeRequest(c.path, c.headers, c.handshake), {
      timeoutMs: HANG_MS,
      settle: (frames) => frames.some((f) => f.opcode === 0x8) || frames.some((f) => f.opcode === 0x1 && /"type":"(ready|connected|hello|snapshot|deck)"/.test(f.payload.toString())),
    });
    const where = `seed=0x${SEED.toString(16)} ${c.id} (${c.who}) [${reproduce(c.id)}]: upgrade ${describeRequest({ method: c.handshake.method ?? 'GET', path: c.path, headers: { ...c.headers, ...c.handshake } as Record<string, string> }, secrets())}`;
    tally.latency('upgrade', Date.now() - t0, where);
    judgeUpgrade(c, out, tally, where);
  });
}

// ---------------------------------------------------------------- raw sockets

interface RawCase {
  name: string;
  bytes: (Buffer | string)[];
  dialect: 'aio' | 'execd' | 'native';
  mustBe?: number[];
  /** Node or llhttp may close without an answer here (CONNECT with no handler): noted, not a violation. */
  mayDrop?: boolean;
  tag?: string;
}

function rawCases(): RawCase[] {
  const p = srv.port;
  const H = `Host: 127.0.0.1:${p}\r\n`;
  const M = `Authorization: Bearer ${tokens.mallory}\r\n`;
  const rng = root.fork('raw');
  const cases: RawCase[] = [
    { name: 'invalid method', bytes: [`FOO /health HTTP/1.1\r\n${H}\r\n`], dialect: 'native' },
    { name: 'lowercase method', bytes: [`get /health HTTP/1.1\r\n${H}\r\n`], dialect: 'native' },
    { name: 'NUL in the path', bytes: [`GET /v2/pty/sessions/a\0b HTTP/1.1\r\n${H}${M}\r\n`], dialect: 'native' },
    { name: 'space in the path', bytes: [`GET /v2/pty/sessions/a b HTTP/1.1\r\n${H}${M}\r\n`], dialect: 'native' },
    { name: 'raw 0xff bytes in the path', bytes: [Buffer.concat([Buffer.from('GET /v2/pty/sessions/'), Buffer.from([0xff, 0xfe, 0x80]), Buffer.from(` HTTP/1.1\r\n${H}${M}\r\n`)])], dialect: 'native' },
    { name: 'HTTP/9.9', bytes: [`GET /health HTTP/9.9\r\n${H}\r\n`], dialect: 'native' },
    { name: 'HTTP/0.9 request line', bytes: [`GET /health\r\n${H}\r\n`], dialect: 'native' },
    { name: 'header without a colon', bytes: [`GET /health HTTP/1.1\r\n${H}BadHeader\r\n\r\n`], dialect: 'native' },
    { name: 'space in a header name', bytes: [`GET /health HTTP/1.1\r\n${H}X Bad: 1\r\n\r\n`], dialect: 'native' },
    { name: 'obsolete line folding', bytes: [`GET /health HTTP/1.1\r\n${H}X-A: 1\r\n  folded\r\n\r\n`], dialect: 'native' },
    { name: 'bare CR line ends', bytes: [`GET /health HTTP/1.1\r${H.replace('\r\n', '\r')}\r\n\r\n`], dialect: 'native' },
    { name: 'Content-Length not a number', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Length: abc\r\n\r\n{}`], dialect: 'native' },
    { name: 'negative Content-Length', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Length: -1\r\n\r\n{}`], dialect: 'native' },
    { name: 'two different Content-Lengths', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`], dialect: 'native' },
    { name: 'Content-Length and chunked', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`], dialect: 'native' },
    { name: 'bad chunk size', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`], dialect: 'native' },
    { name: 'chunked body over the limit', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`, ...Array.from({ length: 20 }, () => `10000\r\n${'x'.repeat(0x10000)}\r\n`), '0\r\n\r\n'], dialect: 'aio' },
    { name: 'absurd Content-Length', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{"a":`], dialect: 'aio' },
    { name: 'headers over 16 KiB', bytes: [`GET /health HTTP/1.1\r\n${H}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`], dialect: 'native' },
    { name: 'URL over 16 KiB', bytes: [`GET /v2/pty/sessions/${'a'.repeat(20_000)} HTTP/1.1\r\n${H}${M}\r\n`], dialect: 'native' },
    { name: '3000 headers', bytes: [`GET /v2/pty/sessions HTTP/1.1\r\n${H}${M}${Array.from({ length: 3000 }, (_, i) => `X-${i}: ${i}\r\n`).join('')}\r\n`], dialect: 'native' },
    { name: 'non-ASCII bytes in Authorization', bytes: [Buffer.concat([Buffer.from(`GET /v2/pty/sessions HTTP/1.1\r\n${H}Authorization: Bearer `), Buffer.from([0xff, 0xfe, 0xe2, 0x98, 0x83]), Buffer.from('\r\n\r\n')])], dialect: 'aio' },
    { name: 'NUL in the Host header', bytes: [`GET /health HTTP/1.1\r\nHost: 127.0.0.1\0:${p}\r\n\r\n`], dialect: 'native' },
    { name: 'HTTP/1.1 without Host', bytes: [`GET /health HTTP/1.1\r\n\r\n`], dialect: 'native', tag: '[no-host-1.1]' },
    { name: 'HTTP/1.0 without Host', bytes: [`GET /v2/pty/sessions HTTP/1.0\r\n${M}\r\n`], dialect: 'aio', mustBe: [403] },
    { name: 'foreign Host after ours', bytes: [`GET /v1/ping HTTP/1.1\r\n${H}Host: evil.example\r\n\r\n`], dialect: 'aio' },
    { name: 'foreign Host before ours', bytes: [`GET /v1/ping HTTP/1.1\r\nHost: evil.example\r\n${H}\r\n`], dialect: 'aio', mustBe: [403] },
    { name: 'absolute-form URI naming another host', bytes: [`GET http://evil.example/v1/ping HTTP/1.1\r\n${H}\r\n`], dialect: 'native' },
    { name: 'foreign Origin and invalid JSON', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Origin: http://evil.example\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{abc}`], dialect: 'aio', mustBe: [403] },
    { name: 'foreign Host and an absurd Content-Length', bytes: [`POST /v2/pty/sessions HTTP/1.1\r\nHost: evil.example\r\n${M}Content-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{`], dialect: 'aio', mustBe: [403] },
    { name: 'pipelined garbage after a valid request', bytes: [`GET /health HTTP/1.1\r\n${H}\r\n\x00\x01\x02 garbage\r\n\r\n`], dialect: 'native' },
    { name: 'OPTIONS *', bytes: [`OPTIONS * HTTP/1.1\r\n${H}\r\n`], dialect: 'native' },
    { name: 'CONNECT', bytes: [`CONNECT 127.0.0.1:22 HTTP/1.1\r\n${H}\r\n`], dialect: 'native', mayDrop: true },
    { name: 'Upgrade: h2c on a plain route', bytes: [`GET /health HTTP/1.1\r\n${H}Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n`], dialect: 'native' },
    { name: 'HTTP/2 preface', bytes: ['PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'], dialect: 'native' },
    { name: 'TLS ClientHello on the plain port', bytes: [Buffer.from('16030100a5010000a10303' + '00'.repeat(64), 'hex')], dialect: 'native' },
  ];
  for (let i = 0; i < 14; i++) cases.push({ name: `random bytes #${i}`, bytes: [rng.bytes(rng.int(1, 400)), '\r\n\r\n'], dialect: 'native' });
  return cases;
}

async function rawLane(): Promise<void> {
  for (const c of rawCases()) {
    const id = `raw:${c.name}`;
    if (!only(id)) continue;
    tally.try('raw');
    const where = `seed=0x${SEED.toString(16)} ${id} [${reproduce(id)}]: ${JSON.stringify(c.bytes.map((b) => b.toString().slice(0, 160)).join('')).slice(0, 300)}`;
    const out = await rawExchange(srv.port, c.bytes, { waitMs: 30_000, untilResponse: true });
    const res = parseHttpResponse(out.data);
    if (!res) {
      if (c.mayDrop && out.closedByServer) {
        tally.other('raw', 'closed without an answer');
        tally.note(`${where}: closed without an answer`);
      } else {
        tally.other('raw', out.closedByServer ? 'closed without an answer' : 'hang');
        tally.violate(out.closedByServer ? 'no-answer' : 'hang', where, `no HTTP answer (${out.data.length} bytes back: ${JSON.stringify(out.data.toString('latin1').slice(0, 120))})`);
      }
      continue;
    }
    judgeRawResponse(res, c.dialect, tally, `${where}${c.tag ? ` ${c.tag}` : ''}`, { mustBe: c.mustBe, tag: c.tag });
  }
  await wsViolationLane();
}

/** After a good handshake, frames that break the WebSocket protocol itself: the server must close (not 1011). */
async function wsViolationLane(): Promise<void> {
  const text = (s: string) => Buffer.from(s);
  const violations: { name: string; frames: Buffer[]; expect: number[] }[] = [
    { name: 'RSV1 set without an extension', frames: [encodeFrame({ opcode: 0x1, rsv: 4, payload: text('{}') })], expect: [1002] },
    { name: 'unmasked client frame', frames: [encodeFrame({ opcode: 0x1, mask: false, payload: text('{}') })], expect: [1002] },
    { name: 'reserved data opcode 0x3', frames: [encodeFrame({ opcode: 0x3, payload: text('x') })], expect: [1002] },
    { name: 'reserved control opcode 0xB', frames: [encodeFrame({ opcode: 0xb })], expect: [1002] },
    { name: 'ping with a 126-byte payload', frames: [encodeFrame({ opcode: 0x9, payload: Buffer.alloc(126, 1) })], expect: [1002] },
    { name: 'fragmented ping', frames: [encodeFrame({ opcode: 0x9, fin: false, payload: text('p') })], expect: [1002] },
    { name: 'continuation without a start', frames: [encodeFrame({ opcode: 0x0, payload: text('x') })], expect: [1002] },
    { name: 'new message inside a fragmented one', frames: [encodeFrame({ opcode: 0x1, fin: false, payload: text('{') }), encodeFrame({ opcode: 0x2, payload: text('x') })], expect: [1002] },
    { name: 'close with code 999', frames: [encodeFrame({ opcode: 0x8, payload: Buffer.from([0x03, 0xe7]) })], expect: [1002] },
    { name: 'close with a 1-byte payload', frames: [encodeFrame({ opcode: 0x8, payload: Buffer.from([0x03]) })], expect: [1002] },
    { name: 'close with an invalid UTF-8 reason', frames: [encodeFrame({ opcode: 0x8, payload: Buffer.from([0x03, 0xe8, 0xff, 0xfe]) })], expect: [1007, 1002] },
    { name: 'length 2^63', frames: [encodeFrame({ opcode: 0x2, claimLength: 2n ** 63n })], expect: [1009, 1002] },
    { name: 'length just over the frame limit', frames: [encodeFrame({ opcode: 0x2, claimLength: LIMITS.wsFrameBytes + 1 })], expect: [1009] },
    { name: 'text fragments with invalid UTF-8 across them', frames: [encodeFrame({ opcode: 0x1, fin: false, payload: Buffer.from([0xe2, 0x82]) }), encodeFrame({ opcode: 0x0, payload: Buffer.from([0x41]) })], expect: [1007] },
  ];
  const targets: { name: string; path: string; headers: Record<string, string> }[] = [
    { name: 'events', path: '/api/events', headers: { Authorization: `Bearer ${tokens.mallory}` } },
    { name: 'execd', path: `/pty/${world.freeMallorySinks[1]}/ws`, headers: { 'X-EXECD-ACCESS-TOKEN': tokens.mallory } },
    { name: 'viewer', path: `/api/sessions/${viewerSink}/view`, headers: { Authorization: `Bearer ${tokens.admin}` } },
  ];
  const greeted = (frames: ReturnType<typeof decodeFrames>) => frames.some((f) => f.opcode === 0x1 && /"type":"(hello|connected|snapshot|ready)"/.test(f.payload.toString()));
  for (const t of targets) {
    for (const v of violations) {
      // Every violation on the events socket; a sample on the session sockets (each attach is costly).
      if (t.name !== 'events' && !['RSV1 set without an extension', 'ping with a 126-byte payload', 'length 2^63', 'unmasked client frame'].includes(v.name)) continue;
      const id = `ws-protocol:${t.name}:${v.name}`;
      if (!only(id)) continue;
      tally.try('raw');
      const where = `seed=0x${SEED.toString(16)} ${id} [${reproduce(id)}]: handshake on ${t.path}, then ${v.name}`;
      // Wait for the greeting, then break the protocol, then wait for the server's close.
      const result = await protocolViolation(t.path, t.headers, v.frames, greeted);
      if (!result.upgraded) {
        tally.other('raw', `upgrade refused ${result.status}`);
        tally.note(`${where}: upgrade refused ${result.status} ${result.body}`);
        continue;
      }
      if (result.code === null) {
        tally.other('raw', result.closed ? 'dropped without a close frame' : 'hang');
        if (!result.closed) tally.violate('hang', where, `the server neither closed nor answered a protocol violation within ${HANG_MS / 1000} s`);
        else tally.note(`${where}: connection dropped without a close frame`);
        continue;
      }
      tally.close(result.code);
      if (result.code === 1011) tally.violate('server-error', where, 'closed with 1011');
      else if (!v.expect.includes(result.code)) tally.note(`${where}: closed ${result.code}, expected ${v.expect.join('/')}`);
      tally.reject('raw', `ws close ${result.code}`, 'ws protocol');
    }
  }
}

function protocolViolation(
  path: string,
  headers: Record<string, string>,
  frames: Buffer[],
  greeted: (f: ReturnType<typeof decodeFrames>) => boolean,
): Promise<{ upgraded: boolean; status?: number; body?: string; code: number | null; closed: boolean }> {
  return new Promise((resolve) => {
    const s = connect(srv.port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let sent = false;
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const res = parseHttpResponse(data);
      if (!res || res.status !== 101) return resolve({ upgraded: false, status: res?.status, body: res?.text.slice(0, 200), code: null, closed });
      const fr = decodeFrames(data.subarray(data.indexOf('\r\n\r\n') + 4));
      resolve({ upgraded: true, code: closeCodeOf(fr), closed });
    };
    const timer = setTimeout(() => finish(false), HANG_MS);
    s.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      const res = parseHttpResponse(data);
      if (!res) return;
      if (res.status !== 101) return finish(false);
      const fr = decodeFrames(data.subarray(data.indexOf('\r\n\r\n') + 4));
      if (!sent && greeted(fr)) {
        sent = true;
        for (const f of frames) s.write(f);
      }
      if (fr.some((f) => f.opcode === 0x8)) finish(false);
    });
    s.on('error', () => finish(true));
    s.on('close', () => finish(true));
    s.on('connect', () => s.write(upgradeRequest(path, { Host: `127.0.0.1:${srv.port}`, ...headers })));
  });
}

/** Sockets that send half of something and stall; held for the whole attack, released at the end. */
async function openStalls(): Promise<void> {
  const p = srv.port;
  const H = `Host: 127.0.0.1:${p}\r\n`;
  const M = `Authorization: Bearer ${tokens.mallory}\r\n`;
  const half = (name: string, bytes: (Buffer | string)[]) => ({ name, bytes });
  const plans = [
    half('half a request line', ['GET /heal']),
    half('request line without its end', ['POST /v2/pty/sessions HTTP/1.']),
    half('half the headers', [`GET /health HTTP/1.1\r\n${H}X-Slow: a`]),
    half('headers without the blank line', [`GET /v2/pty/sessions HTTP/1.1\r\n${H}${M}`]),
    half('half a body', [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"cols":`]),
    half('half a chunked body', [`POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n{"cols":`]),
    half('WebSocket handshake, then 1 byte of a frame', [upgradeRequest('/api/events', { Host: `127.0.0.1:${p}`, Authorization: `Bearer ${tokens.mallory}` }), encodeFrame({ opcode: 0x1, payload: Buffer.from('{}') }).subarray(0, 1)]),
    half('AIO socket, then a frame header claiming 1000 bytes and 10 of them', [
      upgradeRequest(`/v2/pty/sessions/${world.freeMallorySinks[0]}/ws`, { Host: `127.0.0.1:${p}`, Authorization: `Bearer ${tokens.mallory}` }),
      encodeFrame({ opcode: 0x1, payload: Buffer.alloc(1000, 0x41) }).subarray(0, 18),
    ]),
    half('viewer socket, then half of a 64-bit length header', [
      upgradeRequest(`/api/sessions/${viewerSink}/view`, { Host: `127.0.0.1:${p}`, Authorization: `Bearer ${tokens.admin}` }),
      encodeFrame({ opcode: 0x2, claimLength: 70_000 }).subarray(0, 5),
    ]),
  ];
  for (const plan of plans) {
    if (!only(`stall:${plan.name}`)) continue;
    tally.try('raw');
    stalls.push({ name: plan.name, held: await hold(srv.port, plan.bytes) });
  }
  // Slow clients (issue 11): bodies that trickle in a byte a second, with and without a credential, and
  // a crowd of connections that never say a word. The server must cut every one of them by itself.
  const trickle = (name: string, head: string): void => {
    if (!only(`stall:${name}`)) return;
    tally.try('raw');
    void hold(srv.port, [head]).then((held) => {
      const timer = setInterval(() => (held.closedByServer() ? clearInterval(timer) : held.socket.write('x')), 1000);
      timer.unref();
      stalls.push({ name, held, mustBeCut: Date.now() + 2 * LIMITS.bodyTimeoutMs + 10_000, stop: () => clearInterval(timer) });
    });
  };
  trickle('trickling body, with a credential', `POST /v2/pty/sessions HTTP/1.1\r\n${H}${M}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"cwd":"`);
  trickle('trickling login body, without one', `POST /api/login HTTP/1.1\r\n${H}Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"token":"`);
  trickle('trickling headers', `GET /health HTTP/1.1\r\n${H}X-Slow: `);
  for (let i = 0; i < LIMITS.unauthenticatedConnections + 8; i++) {
    const name = `silent connection #${i}`;
    if (!only(`stall:${name}`)) continue;
    tally.try('raw');
    stalls.push({ name, held: await hold(srv.port, []), mustBeCut: Date.now() + 2 * LIMITS.headersTimeoutMs + 10_000 });
  }
}

/**
 * Judges what the stalled sockets got. The slow ones (mustBeCut) must have been closed by the server
 * itself; the attack usually outlasts their deadline, and when it did not, this waits for it.
 */
async function releaseStalls(): Promise<void> {
  const deadline = Math.max(0, ...stalls.map((s) => s.mustBeCut ?? 0));
  await until(() => stalls.every((s) => !s.mustBeCut || s.held.closedByServer()), Math.max(0, deadline - Date.now()), 250);
  for (const s of stalls) {
    s.stop?.();
    const res = parseHttpResponse(s.held.received());
    const status = res ? `answered ${res.status}` : s.held.closedByServer() ? 'closed by the server' : 'still waiting';
    tally.other('raw', `stall: ${status}`);
    if (res && res.status >= 500) tally.violate('server-error', `stall:${s.name}`, `got ${res.status} ${res.text.slice(0, 200)}`);
    if (res && res.status !== 101 && res.status >= 400) judgeRawResponse(res, 'native', tally, `stall:${s.name}`);
    if (s.mustBeCut) {
      tally.check('slow clients are cut by the server');
      if (!s.held.closedByServer()) tally.violate('slow-client-not-cut', `stall:${s.name}`, `still open when judged, past twice its deadline (headers ${LIMITS.headersTimeoutMs / 1000} s, body ${LIMITS.bodyTimeoutMs / 1000} s)`);
    }
    s.held.release();
  }
}

// ---------------------------------------------------------------- the attack

describe('hostile input against live sessions', () => {
  test('thousands of hostile requests, frames and sockets: no crash, no 5xx, no 1011, live output intact, memory bounded', async () => {
    const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });
    await openStalls();

    // Memory: sampled through the attack.
    gc();
    rss.heapBaseline = liveBytes();
    rss.baseline = process.memoryUsage().rss;
    rss.max = rss.baseline;
    let tick = Date.now();
    const cpu0 = process.cpuUsage();
    const sampler = setInterval(() => {
      const v = process.memoryUsage().rss;
      rss.max = Math.max(rss.max, v);
      rss.samples++;
      const now = Date.now();
      const lag = now - tick - 100;
      tick = now;
      loop.maxLagMs = Math.max(loop.maxLagMs, lag);
      if (lag > 1000) loop.lagOver1s++;
      const mallorys = srv.app.manager.list().filter((x) => x.owner === 'mallory').length;
      if (mallorys > LIMITS.sessionsPerAgent) tally.violate('quota-exceeded', 'sampler', `mallory holds ${mallorys} sessions, over her quota of ${LIMITS.sessionsPerAgent}`);
    }, 100);

    // The live programs print a burst for every line the driver sends, for as long as the attack runs.
    let attacking = true;
    const driver = (async () => {
      while (attacking || lives[0].bursts < 20) {
        for (const l of lives) l.burst(N.burstLines);
        await sleep(N.burstEveryMs);
      }
    })();

    const started = Date.now();
    try {
      await Promise.all([httpLane(), Promise.all(socketPlans().map((p) => frameLane(p))), upgradeLane().then(rawLane)]);
    } finally {
      attacking = false;
      attackSeconds = (Date.now() - started) / 1000;
      const used = process.cpuUsage(cpu0);
      loop.cpuShare = (used.user + used.system) / 1000 / (Date.now() - started);
      await driver;
      clearInterval(sampler);
    }
    await cookieLane();
    await releaseStalls();

    // The hard rules first: no crash, no 5xx, no 1011, no hang, nothing dropped without an answer.
    // (expect.soft: every broken invariant of the run is reported, not only the first.)
    const crashed = crashes.reduce<Record<string, number>>((m, c) => ((m[c] = (m[c] ?? 0) + 1), m), {});
    expect.soft(crashed, `the server raised ${crashes.length} uncaught exception(s) (by error, with counts); outside a test each one kills the process and every session with it (D0)`).toEqual({});
    const fatal = tally.violations.filter((v) => ['server-error', 'hang', 'no-answer'].includes(v.rule));
    expect.soft(fatal, show(fatal)).toEqual([]);

    // The live sessions were not touched: their watchers got nothing but output, nobody resized,
    // closed, took over or re-owned them (the person's own sessions start in type, agents' in watch).
    for (const l of lives) {
      const s = srv.app.manager.get(l.id);
      expect.soft(s, `live ${l.label} (${l.id}) is gone`).toBeTruthy();
      if (!s) continue;
      expect.soft(l.unexpectedFrames(), `live ${l.label}: the watcher got frames it should not have`).toEqual([]);
      expect.soft(l.watcher.closed, `live ${l.label}: the watcher was closed`).toBeNull();
      expect.soft({ owner: s.owner, closed: s.closed, alive: s.isAlive, cols: s.cols, rows: s.rows, floor: s.floor.mode }, `live ${l.label}`).toEqual({ owner: l.owner, closed: false, alive: true, cols: 80, rows: 24, floor: l.owner === 'admin' ? 'type' : 'watch' });
      expect.soft(l.bursts, `live ${l.label} ran too few bursts to span the attack`).toBeGreaterThanOrEqual(20);
    }

    // The query flood did not wedge its session: stopped, it runs a command.
    // The flood's loop runs in the shell itself (printf is a builtin), and /api's signal reaches only a
    // program (never the shell's own group): try until one lands on a program (seq, sleep) and the loop
    // ends, as a person would press ^C again. A signal can land on a sleep that is ending anyway (then
    // the shell does not see it killed, and loops on).
    for (let i = 0; i < 100; i++) {
      const sig = await api(tokens.mallory, 'POST', `/api/sessions/${floodId}/signal`, { signal: 'SIGINT' });
      if (!sig.body?.delivered) {
        await sleep(100);
        continue;
      }
      const ended = await api(tokens.mallory, 'POST', `/v2/pty/sessions/${floodId}/wait`, { seconds: 5 });
      if (ended.body?.data?.status === 'completed') break;
    }
    const afterFlood = await api(tokens.mallory, 'POST', `/v2/pty/sessions/${floodId}/exec`, { command: 'echo flood-$((6*7))', timeout: 60 });
    tally.check('a query flood leaves its session usable');
    if (afterFlood.body?.data?.output !== 'flood-42') tally.violate('wedged', `session ${floodId}`, `after the query flood, exec answered ${JSON.stringify(afterFlood.body).slice(0, 300)}`);
    // Nothing was created on a pseudo-filesystem.
    const madeThere = PSEUDO_CREATIONS.filter((p) => existsSync(p));
    tally.check('no directory created on a pseudo-filesystem');
    if (madeThere.length) tally.violate('pseudo-created', 'paths family', `created: ${madeThere.join(', ')}`);

    // Mallory cleans up after herself: that must close only her sessions.
    const cleaned = await api(tokens.mallory, 'DELETE', '/v1/shell/sessions');
    expect.soft(cleaned.status, JSON.stringify(cleaned.body)).toBe(200);

    // The server still answers, and nobody polluted Object.prototype through a JSON body.
    const health = await httpSend(srv.port, { method: 'GET', path: '/health', headers: { Host: `127.0.0.1:${srv.port}` } });
    expect.soft(health.status, `${health.text} ${health.error ?? ''}`).toBe(200);
    expect.soft(health.json).toEqual({ status: 'ok' });
    expect.soft(({} as Record<string, unknown>).polluted, 'Object.prototype polluted through a request').toBeUndefined();
    expect.soft(({} as Record<string, unknown>).isAdmin, 'Object.prototype polluted through a request').toBeUndefined();

    // The live programs finish; every byte they printed arrived, in order, once, and nothing else.
    for (const l of lives) l.write('q\n');
    for (const l of lives) {
      const done = await until(() => l.received().includes(`DONE-${l.label}\r\n`), 2 * HANG_MS, 50);
      expect.soft(done, `live ${l.label} (${l.id}) never printed DONE; received tail ${JSON.stringify(l.received().slice(-300))}`).toBe(true);
      if (!done) continue;
      const expected = l.expected();
      const received = l.received();
      tally.checks.set(`live ${l.label}: bytes compared (watcher + log)`, expected.length);
      const { region, count } = LiveSession.region(received, l.label);
      expect.soft(count, `live ${l.label}: READY seen ${count} times`).toBe(1);
      // The execd session's stream is its program's alone: it must be exactly the expected text.
      if (l.kind === 'execd') expect.soft(received === expected, `live ${l.label} (seed=0x${SEED.toString(16)}): the watcher's stream differs from the program's output: ${firstDifference(received, expected)}`).toBe(true);
      else expect.soft(region === expected, `live ${l.label} (seed=0x${SEED.toString(16)}): the watcher's stream differs from the program's output: ${firstDifference(region ?? '', expected)}`).toBe(true);
      // And the session's own output log holds the same bytes.
      const s = srv.app.manager.get(l.id);
      if (!s) continue;
      const log = s.log.read(s.log.start, s.log.end).toString('latin1');
      const fromLog = l.kind === 'execd' ? log : LiveSession.region(log, l.label).region;
      expect.soft(fromLog === expected, `live ${l.label}: the output log differs from the program's output: ${firstDifference(fromLog ?? '', expected)}`).toBe(true);
    }

    // Memory stayed bounded (see RSS_GROWTH_BOUND and RETAINED_BOUND for the budgets).
    expect.soft(rss.max - rss.baseline, `rss grew by ${((rss.max - rss.baseline) / 2 ** 20).toFixed(0)} MiB during the attack`).toBeLessThan(RSS_GROWTH_BOUND);
    await until(() => srv.app.manager.list().every((s) => s.owner !== 'mallory'), 30_000, 100);
    gc();
    gc();
    rss.heapAfter = liveBytes();
    expect.soft(rss.heapAfter - rss.heapBaseline, `${((rss.heapAfter - rss.heapBaseline) / 2 ** 20).toFixed(1)} MiB still live after the attack and a full GC (of ${(tally.bytesSent / 2 ** 20).toFixed(0)} MiB sent)`).toBeLessThan(RETAINED_BOUND);

    // Enough hostile traffic.
    const total = Object.values(tally.tried).reduce((x, y) => x + y, 0);
    if (ONLY === null) expect.soft(total, 'hostile requests, frames and sockets tried').toBeGreaterThanOrEqual(2000);

    // Anonymous sessions whose socket never opened (D4) are counted for the report.
    leakedAnonymous = srv.app.manager.list().filter((s) => s.spec.origin === 'aio-ws' && s.attachedClients === 0 && !s.closed).length;

    // A normal exec still works, for a fresh agent, on a live shell that saw the whole attack, and a new socket opens.
    const fresh = await created(await api(tokens.carol, 'POST', '/v2/pty/sessions', { cwd: tmp }), 'final session');
    const exec = await api(tokens.carol, 'POST', `/v2/pty/sessions/${fresh}/exec`, { command: 'echo final-$((6*7))' });
    expect(exec.status, JSON.stringify(exec.body)).toBe(200);
    expect(exec.body.data).toMatchObject({ status: 'completed', output: 'final-42', exit_code: 0 });
    const again = await api(tokens.alice, 'POST', '/v2/pty/sessions/live-b/exec', { command: 'echo still-$((40+2))' });
    expect(again.body.data, JSON.stringify(again.body)).toMatchObject({ status: 'completed', output: 'still-42', exit_code: 0 });
    const sock = await openOrThrow(`${wsUrl()}/v2/pty/ws`, bearer(tokens.carol), 'final socket');
    expect(await sock.waitFor((f) => f.json?.type === 'ready')).toBeGreaterThanOrEqual(0);
    sock.close();
  }, 450_000);

  test('every refusal says what was wrong, in its door\'s dialect, naming the field', () => {
    const vs = tally.unknownViolations(['message', 'field-not-named', 'ws-error-message']);
    expect(vs, show(vs)).toEqual([]);
  });

  test('a foreign Host or Origin gets 403 and nothing else', () => {
    const vs = tally.unknownViolations(['foreign-not-403']);
    expect(vs, show(vs)).toEqual([]);
  });

  test('credentials and ownership hold: no bypass, no access to another principal\'s session, no traversal', () => {
    const vs = tally.unknownViolations(['auth-bypass', 'credential-not-checked-first', 'ownership', 'traversal-leak']);
    expect(vs, show(vs)).toEqual([]);
  });

  test('invalid input is refused: no invalid body accepted, every wrong-shaped control frame answered with an error frame', () => {
    const vs = tally.unknownViolations(['accepted-invalid', 'ws-wrong-shape-not-rejected', 'ws-no-pong']);
    expect(vs, show(vs)).toEqual([]);
  });

  test('every process started in a session ends with it, whatever it shed (escape family)', async () => {
    await srv.app.manager.closeAll();
    const left = allPids()
      .map((pid) => ({ pid, cmd: commandLine(pid) }))
      .filter((p) => isEscapeMark(p.cmd));
    for (const p of left) process.kill(p.pid, 'SIGKILL');
    expect(left.map((p) => `${p.pid} ${p.cmd}`)).toEqual([]);
  }, 120_000);

  test('nothing else went wrong', () => {
    const covered = ['server-error', 'hang', 'no-answer', 'message', 'field-not-named', 'ws-error-message', 'foreign-not-403', 'auth-bypass', 'credential-not-checked-first', 'ownership', 'traversal-leak', 'accepted-invalid', 'ws-wrong-shape-not-rejected', 'ws-no-pong'];
    const vs = tally.violations.filter((v) => !v.known && !covered.includes(v.rule));
    expect(vs, show(vs)).toEqual([]);
  });
});

function show(vs: Violation[]): string {
  if (!vs.length) return '';
  const head = vs.slice(0, 8).map((v) => `\n  [${v.rule}] ${v.where}\n      ${v.detail}`);
  return `${vs.length} violation(s):${head.join('')}${vs.length > 8 ? `\n  … and ${vs.length - 8} more` : ''}`;
}

// ---------------------------------------------------------------- defects this suite found, pinned

/**
 * Defects this suite found (D0-D6 in its first runs), each reduced to one deterministic request and
 * fixed; these keep them fixed. D0, a malformed frame crashing the server, is covered by the attack
 * itself: a crash fails the whole run.
 */
describe('defects found by this suite stay fixed', () => {
  const H = () => `Host: 127.0.0.1:${srv.port}\r\n`;
  const raw = async (text: string) => parseHttpResponse((await rawExchange(srv.port, [text], { waitMs: 5000, untilResponse: true })).data);
  const aioEnvelope = (json: unknown) => {
    const m = errorMessage('aio', json);
    if ('problem' in m) throw new Error(m.problem);
    return m.message;
  };

  test('D1 a malformed URL is answered in the door\'s dialect', async () => {
    const res = await raw(`GET /v2/pty/sessions/%E0%A4%A HTTP/1.1\r\n${H()}Authorization: Bearer ${tokens.admin}\r\nConnection: close\r\n\r\n`);
    expect(res?.status).toBe(400);
    expect(aioEnvelope(res?.json)).toMatch(/session id|URL|encoding/i);
  });

  test('D1 a foreign Host with a malformed URL gets 403', async () => {
    const res = await raw(`GET /v2/pty/sessions/%E0%A4%A HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`);
    expect(res?.status).toBe(403);
  });

  test('D1 a 300-character id with a foreign Host gets 403', async () => {
    const res = await raw(`GET /v2/pty/sessions/${'y'.repeat(300)} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`);
    expect(res?.status).toBe(403);
  });

  test('D2 an HTTP/1.1 request without Host gets a message that names Host', async () => {
    const res = await raw('GET /health HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(res?.status).toBeGreaterThanOrEqual(400);
    const m = errorMessage('native', res?.json);
    expect('message' in m ? m.message : m.problem).toMatch(/Host/);
  });

  test('D3 a handshake with a bad Sec-WebSocket-Key is refused in the dialect', async () => {
    const out = await upgradeExchange(srv.port, upgradeRequest('/api/events', { Host: `127.0.0.1:${srv.port}`, Authorization: `Bearer ${tokens.admin}` }, { key: 'bad' }));
    expect(out.response?.status).toBe(400);
    const m = errorMessage('native', out.response?.json);
    expect('message' in m ? m.message : m.problem).toMatch(/Sec-WebSocket-Key/);
  });

  test('D4 a refused anonymous /v2/pty/ws upgrade leaves no session behind', async () => {
    const before = srv.app.manager.list().filter((s) => s.spec.origin === 'aio-ws').length;
    const out = await upgradeExchange(srv.port, upgradeRequest('/v2/pty/ws', { Host: `127.0.0.1:${srv.port}`, Authorization: `Bearer ${tokens.carol}` }, { version: '99' }));
    expect(out.response?.status).toBe(400);
    await sleep(1500);
    const after = srv.app.manager.list().filter((s) => s.spec.origin === 'aio-ws').length;
    expect(after, 'sessions created by refused /v2/pty/ws upgrades').toBe(before);
  });

  test('D5 v1 sessions/create names exec_dir in its error', async () => {
    const r = await api(tokens.carol, 'POST', '/v1/shell/sessions/create', { exec_dir: '/nonexistent-hostile' });
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/exec_dir/);
  });

  test('D6 execd POST /pty names cwd in its error', async () => {
    const r = await api(tokens.carol, 'POST', '/pty', { cwd: '/etc/passwd/x' });
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/\bcwd\b/);
  });
});
