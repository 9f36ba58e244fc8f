import type { Rng } from './prng';
import { foreignHosts, foreignOrigins, HOSTILE_SEGMENTS, type World } from './http-gen';

/**
 * Hostile WebSocket traffic: frames for each protocol (AIO json/binary, execd, viewer, events, deck), each
 * labelled with what the protocol promises for it (docs/API.md), and upgrade requests with every kind of
 * wrong credential, id, query, header or handshake.
 *
 *   'error'  a control frame of a known type with the wrong shape: exactly one error frame, with a message
 *   'pong'   a ping: a pong (AIO echoes the timestamp)
 *   'silent' typed as input, ignored, or a valid control frame: no error frame
 *   'close'  a protocol-level violation (over the frame limit, invalid UTF-8): the socket closes with `code`
 *
 * SAFETY: frames that can end up typed (`silent` ones carrying raw bytes) are only ever sent to sink
 * sessions (`cat >/dev/null` in raw mode); sockets on interactive shells get `onlyRejected` frames.
 */
export type Protocol = 'aio' | 'execd' | 'viewer' | 'events' | 'deck';

export interface FrameCase {
  data: string | Buffer;
  binary: boolean;
  expect: 'error' | 'pong' | 'silent' | 'close';
  closeCode?: number;
  /** AIO pong must echo this timestamp. */
  timestamp?: unknown;
  note: string;
}

const BAD_DIMS: unknown[] = [0, -1, -80, 1.5, '80', null, true, [80], { v: 80 }, 1e12, 2 ** 31, -0.5, 'wide'];
/** execd clamps a positive integer size to the maximum (as execd does); only non-positive or non-integer sizes are refused. */
const BAD_EXECD_DIMS: unknown[] = [0, -1, -80, 1.5, '80', null, true, [80], { v: 80 }, -0.5, 'wide', -2147483648];
const NON_STRINGS: unknown[] = [5, null, true, false, [], ['a'], { text: 'a' }, 1e308];

const j = (v: unknown): string => JSON.stringify(v);

function garbageText(rng: Rng): string {
  return rng.weighted<string>([
    [3, rng.unicode(rng.int(1, 200))],
    [2, rng.ascii(rng.int(1, 200))],
    [1, '{"type":"input","data":"x"'],
    [1, '{'],
    [1, '[1,2,3]'],
    [1, '42'],
    [1, '"just a string"'],
    [1, 'null'],
    [1, '\u0000\u0001\u0002'],
    [1, ' '.repeat(rng.int(1, 50))],
  ]);
}

function oversize(limit: number, rng: Rng): FrameCase {
  const n = limit + rng.pick([1, 1024, limit]);
  const binary = rng.chance(0.5);
  return { data: binary ? Buffer.alloc(n, 0x41) : 'A'.repeat(n), binary, expect: 'close', closeCode: 1009, note: `${binary ? 'binary' : 'text'} frame of ${n} bytes, over the ${limit}-byte limit` };
}

function badUtf8(rng: Rng): FrameCase {
  const bytes = rng.pick([Buffer.from([0xff, 0xfe]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('{"type":"ping","timestamp":"\xff"}', 'latin1')]);
  return { data: bytes, binary: false, expect: 'close', closeCode: 1007, note: `text frame with invalid UTF-8 ${bytes.toString('hex')}` };
}

export function aioFrame(rng: Rng, opts: { sink: boolean; frameLimit: number }): FrameCase {
  const kinds: [number, () => FrameCase][] = [
    [
      10,
      () => {
        const v = rng.pick(NON_STRINGS);
        const f: Record<string, unknown> = { type: 'input' };
        if (!rng.chance(0.15)) f.data = v;
        return { data: j(f), binary: false, expect: 'error', note: `input with data ${'data' in f ? j(v) : 'missing'}` };
      },
    ],
    [
      12,
      () => {
        const cols = rng.chance(0.5) ? rng.pick(BAD_DIMS) : rng.int(1, 1000);
        const rows = rng.chance(0.5) || typeof cols === 'number' ? rng.pick(BAD_DIMS) : rng.int(1, 500);
        const top = rng.chance(0.6);
        const f: Record<string, unknown> = top ? { type: 'resize', cols, rows } : { type: 'resize', data: { cols, rows } };
        if (rng.chance(0.1)) delete (top ? f : (f.data as Record<string, unknown>)).rows;
        if (rng.chance(0.05)) f.data = rng.pick(['80x24', 5, null]);
        return { data: j(f), binary: false, expect: 'error', note: `resize ${j(f).slice(0, 80)}` };
      },
    ],
    [3, () => ({ data: j({ type: 'resize', cols: rng.int(1001, 100000), rows: rng.int(1, 500) }), binary: false, expect: 'error', note: 'resize beyond 1000 columns' })],
    [2, () => ({ data: j({ type: 'resize', cols: rng.int(1, 1000), rows: rng.int(501, 100000) }), binary: false, expect: 'error', note: 'resize beyond 500 rows' })],
    [2, () => ({ data: '{"type":"resize","cols":1e400,"rows":24}', binary: false, expect: 'error', note: 'resize with cols 1e400 (Infinity)' })],
    [2, () => ({ data: '{"type":"resize","__proto__":{"cols":80,"rows":24}}', binary: false, expect: 'error', note: 'resize with sizes only on __proto__' })],
    [
      5,
      () => {
        const ts = rng.pick<unknown>([rng.int(0, 2 ** 40), 'x'.repeat(rng.int(0, 2000)), { nested: [1, 2] }, -1, 1.5, rng.unicode(20)]);
        return { data: j({ type: 'ping', timestamp: ts }), binary: false, expect: 'pong', timestamp: ts, note: 'ping with an odd timestamp' };
      },
    ],
    [2, () => ({ data: j({ type: 'pong', junk: rng.ascii(10) }), binary: false, expect: 'silent', note: 'unsolicited pong' })],
    [3, () => ({ data: j({ type: 'resize', cols: rng.int(1, 1000), rows: rng.int(1, 500) }), binary: false, expect: 'silent', note: 'valid resize' })],
    [3, () => oversize(opts.frameLimit, rng)],
    [3, () => badUtf8(rng)],
  ];
  if (opts.sink) {
    kinds.push(
      [8, () => ({ data: rng.bytes(rng.int(0, 512)), binary: true, expect: 'silent', note: 'binary garbage (raw input)' })],
      [6, () => ({ data: garbageText(rng), binary: false, expect: 'silent', note: 'non-JSON text (typed)' })],
      [4, () => ({ data: j({ type: rng.pick(['bogus', 'INPUT', 'exec', 'kill', '', 'resizex']), data: 'x' }), binary: false, expect: 'silent', note: 'unknown type (typed)' })],
      [3, () => ({ data: j({ type: rng.pick<unknown>([5, null, true, ['input'], { t: 1 }]), data: 'x' }), binary: false, expect: 'silent', note: 'non-string type (typed)' })],
      [5, () => ({ data: j({ type: 'input', data: rng.unicode(rng.int(0, 300)) }), binary: false, expect: 'silent', note: 'input with garbage text' })],
      [2, () => ({ data: rng.bytes(rng.int(20_000, Math.floor(opts.frameLimit * 0.9))), binary: true, expect: 'silent', note: 'large binary frame under the limit' })],
      [1, () => ({ data: '', binary: false, expect: 'silent', note: 'empty text frame' })],
    );
  }
  return rng.weighted(kinds)();
}

export function execdFrame(rng: Rng, opts: { frameLimit: number }): FrameCase {
  return rng.weighted<() => FrameCase>([
    [10, () => ({ data: garbageText(rng), binary: false, expect: 'error', note: 'text frame that is not a JSON object' })],
    [3, () => ({ data: rng.pick(['', '[]', '[{"type":"ping"}]', '"ping"', '0', 'true']), binary: false, expect: 'error', note: 'JSON but not an object' })],
    [
      6,
      () => {
        const f: Record<string, unknown> = {};
        if (rng.chance(0.8)) f.type = rng.pick<unknown>(['bogus', 'PING', 'Resize', '', 5, null, ['ping'], 'stdin ', 'exec', 'input']);
        return { data: j(f), binary: false, expect: 'error', note: `unknown or missing type ${j(f.type)}` };
      },
    ],
    [
      10,
      () => {
        const f: Record<string, unknown> = { type: 'resize', cols: rng.pick(BAD_EXECD_DIMS), rows: rng.chance(0.5) ? rng.pick(BAD_EXECD_DIMS) : 24 };
        if (rng.chance(0.1)) delete f.rows;
        return { data: j(f), binary: false, expect: 'error', note: `resize ${j(f).slice(0, 80)}` };
      },
    ],
    [
      8,
      () => {
        const f: Record<string, unknown> = { type: 'signal' };
        if (rng.chance(0.85)) f.signal = rng.pick<unknown>(['SIGFOO', 'SIGSTOP', 'SIGCONT', 'SIGUSR1', '9', 9, null, '', 'INT', ['SIGINT'], 'SIGINT\0', 'x'.repeat(200)]);
        return { data: j(f), binary: false, expect: 'error', note: `signal ${j(f.signal)}` };
      },
    ],
    [6, () => ({ data: j({ type: 'stdin', data: rng.pick(NON_STRINGS) }), binary: false, expect: 'error', note: 'stdin without string data' })],
    [4, () => ({ data: j({ type: 'ping', junk: rng.unicode(10) }), binary: false, expect: 'pong', note: 'ping' })],
    [3, () => ({ data: j({ type: 'resize', cols: rng.int(1, 5000), rows: rng.int(1, 5000) }), binary: false, expect: 'silent', note: 'valid resize (clamped)' })],
    [3, () => ({ data: j({ type: 'signal', signal: rng.pick(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'sigint']) }), binary: false, expect: 'silent', note: 'valid signal (the sink ignores it)' })],
    [5, () => ({ data: j({ type: 'stdin', data: rng.unicode(rng.int(0, 300)) }), binary: false, expect: 'silent', note: 'stdin with garbage text' })],
    [8, () => ({ data: Buffer.concat([Buffer.from([0x00]), rng.bytes(rng.int(1, 500))]), binary: true, expect: 'silent', note: 'stdin channel, garbage bytes' })],
    [4, () => ({ data: Buffer.concat([Buffer.from([rng.int(1, 255)]), rng.bytes(rng.int(0, 100))]), binary: true, expect: 'silent', note: 'unknown channel byte (ignored)' })],
    [2, () => ({ data: rng.pick([Buffer.alloc(0), Buffer.from([0x00])]), binary: true, expect: 'silent', note: 'empty or header-only binary frame' })],
    [3, () => oversize(opts.frameLimit, rng)],
    [3, () => badUtf8(rng)],
  ])();
}

export function viewerFrame(rng: Rng, opts: { frameLimit: number }): FrameCase {
  return rng.weighted<() => FrameCase>([
    [6, () => ({ data: rng.bytes(rng.int(0, 300)), binary: true, expect: 'error', note: 'binary frame (the viewer takes JSON only)' })],
    [6, () => ({ data: garbageText(rng), binary: false, expect: 'error', note: 'text that is not a JSON object' })],
    [6, () => ({ data: j({ type: 'input', data: rng.pick(NON_STRINGS) }), binary: false, expect: 'error', note: 'input without string data' })],
    [
      8,
      () => {
        const f = { type: 'resize', cols: rng.pick(BAD_DIMS), rows: rng.chance(0.5) ? rng.pick(BAD_DIMS) : 24 };
        return { data: j(f), binary: false, expect: 'error', note: `resize ${j(f).slice(0, 80)}` };
      },
    ],
    [
      6,
      () => {
        const f: Record<string, unknown> = { type: 'ack' };
        if (rng.chance(0.85)) f.bytes = rng.pick<unknown>([-1, -1e308, '100', null, true, [1], { n: 1 }]);
        return { data: j(f), binary: false, expect: 'error', note: `ack with bytes ${j(f.bytes)}` };
      },
    ],
    [
      5,
      () => {
        const f: Record<string, unknown> = { data: 'x' };
        if (rng.chance(0.8)) f.type = rng.pick<unknown>(['snapshot', 'exit', 'bogus', '', 5, null, 'ACK']);
        return { data: j(f), binary: false, expect: 'error', note: `unknown type ${j(f.type)}` };
      },
    ],
    [4, () => ({ data: j({ type: 'ack', bytes: rng.pick([0, 1, 1e308, 65536]) }), binary: false, expect: 'silent', note: 'valid ack' })],
    [4, () => ({ data: j({ type: 'input', data: rng.unicode(rng.int(0, 200)) }), binary: false, expect: 'silent', note: 'person input (floor is type; the session is a sink)' })],
    [2, () => ({ data: j({ type: 'resize', cols: rng.int(1, 1000), rows: rng.int(1, 500) }), binary: false, expect: 'silent', note: 'valid resize' })],
    [3, () => oversize(opts.frameLimit, rng)],
    [3, () => badUtf8(rng)],
  ])();
}

export function eventsFrame(rng: Rng, opts: { frameLimit: number }): FrameCase {
  return rng.weighted<() => FrameCase>([
    [6, () => ({ data: garbageText(rng), binary: false, expect: 'silent', note: 'text on the one-way events socket' })],
    [4, () => ({ data: rng.bytes(rng.int(0, 300)), binary: true, expect: 'silent', note: 'binary on the events socket' })],
    [3, () => ({ data: j({ type: rng.pick(['subscribe', 'input', 'resize', 'hello']), data: rng.ascii(20) }), binary: false, expect: 'silent', note: 'JSON on the events socket' })],
    [1, () => oversize(opts.frameLimit, rng)],
    [1, () => badUtf8(rng)],
  ])();
}

/** The deck socket (person only) takes one frame, `{"type":"glances","ids":[...]}`; anything else gets an error frame. */
export function deckFrame(rng: Rng, opts: { frameLimit: number; ids: string[] }): FrameCase {
  return rng.weighted<() => FrameCase>([
    [5, () => ({ data: rng.bytes(rng.int(0, 300)), binary: true, expect: 'error', note: 'binary frame (the deck takes JSON only)' })],
    [6, () => ({ data: garbageText(rng), binary: false, expect: 'error', note: 'text that is not a JSON object' })],
    [
      6,
      () => {
        const ids = rng.pick<unknown>([undefined, null, 'x', 5, {}, [5], [''], ['x'.repeat(129)], [null], Array.from({ length: 1001 }, (_, i) => `s${i}`)]);
        return { data: j({ type: 'glances', ...(ids === undefined ? {} : { ids }) }), binary: false, expect: 'error', note: `glances with ids ${j(ids)?.slice(0, 60)}` };
      },
    ],
    [4, () => ({ data: j({ type: rng.pick<unknown>(['glance', 'pause', '', 5, null, 'GLANCES', 'input']), ids: [] }), binary: false, expect: 'error', note: 'unknown deck frame type' })],
    [
      5,
      () => {
        // Real ids, ids of no session, hostile ids: glances of whatever the person may see, nothing else.
        const ids = Array.from({ length: rng.int(0, 5) }, () => rng.pick([...opts.ids, `nope-${rng.int(0, 1e6)}`, '../../etc', '%00', rng.unicode(10)]).slice(0, 128) || 'x');
        return { data: j({ type: 'glances', ids }), binary: false, expect: 'silent', note: `glances of ${ids.length} ids` };
      },
    ],
    [2, () => oversize(opts.frameLimit, rng)],
    [2, () => badUtf8(rng)],
  ])();
}

// ---------------------------------------------------------------- upgrades

export interface UpgradeCase {
  id: string;
  path: string;
  headers: Record<string, string>;
  handshake: { method?: string; key?: string | null; version?: string | null };
  who: 'mallory' | 'admin' | 'none' | 'bad';
  expect: {
    foreign?: 'host' | 'origin';
    credential: 'valid' | 'missing' | 'invalid';
    /** Mallory on a session that is not hers: must not reach it. */
    foreignSession: boolean;
    /** The route exists. */
    known: boolean;
    /** A handshake the WebSocket library itself must refuse. */
    badHandshake?: boolean;
  };
}

/**
 * The server routes an upgrade on the WHATWG-normalized path (`/pty/%2e%2e/ws` is `/ws`), matching these
 * patterns; an unknown one is 404 before the credential is looked at.
 */
const WS_ROUTES = [/^\/v2\/pty\/sessions\/[^/]+\/ws$/, /^\/v2\/pty\/ws$/, /^\/v1\/shell\/ws$/, /^\/pty\/[^/]+\/ws$/, /^\/api\/events$/, /^\/api\/sessions\/[^/]+\/view$/, /^\/api\/approvals\/events$/, /^\/api\/deck$/];
export const normalizedPath = (target: string): string => new URL(target, 'http://x').pathname;
export const wsRouteKnown = (target: string): boolean => WS_ROUTES.some((re) => re.test(normalizedPath(target)));

export interface UpgradeWorld extends World {
  /** Mallory sinks not held by the frame sweep's sockets (free for durable takeovers and second sockets). */
  freeMallorySinks: string[];
}

export function generateUpgradeCase(index: number, root: Rng, w: UpgradeWorld): UpgradeCase {
  const rng = root.fork('upgrade', index);
  const who = rng.weighted<UpgradeCase['who']>([
    [50, 'mallory'],
    [10, 'admin'],
    [20, 'none'],
    [20, 'bad'],
  ]);
  const foreign = rng.weighted<'host' | 'origin' | null>([
    [80, null],
    [10, 'host'],
    [10, 'origin'],
  ]);
  const headers: Record<string, string> = { Host: foreign === 'host' ? rng.pick(foreignHosts(w.port)) : `127.0.0.1:${w.port}` };
  if (foreign === 'origin') headers.Origin = rng.pick(foreignOrigins(w.port));

  // Which session: mallory aims at others' sessions and odd ids; admin at its sacrificial ones only.
  let sessionId: string;
  let foreignSession = false;
  if (who === 'admin') sessionId = rng.chance(0.5) && w.admin.doomed.length ? rng.pick(w.admin.doomed) : rng.pick([`nope-${rng.int(0, 1e6)}`, rng.pick(HOSTILE_SEGMENTS)]);
  else {
    const r = rng.next();
    if (r < 0.45) {
      sessionId = rng.pick([...w.live, ...w.admin.sinks]);
      foreignSession = who === 'mallory';
    } else if (r < 0.65) sessionId = rng.pick(HOSTILE_SEGMENTS);
    else if (r < 0.8 && w.freeMallorySinks.length) sessionId = rng.pick(w.freeMallorySinks);
    else sessionId = `nope-${rng.int(0, 1e6)}`;
  }
  const seg = HOSTILE_SEGMENTS.includes(sessionId) ? sessionId : encodeURIComponent(sessionId);

  let query = '';
  let known = true;
  const path = rng.weighted<() => string>([
    [
      6,
      () => {
        query = rng.weighted<string>([
          [6, ''],
          [1, '?protocol=binary'],
          [1, '?protocol=xml'],
          [1, '?protocol='],
          [1, '?replay_bytes=abc'],
          [1, '?replay_bytes=1e999'],
          [1, '?replay_bytes=-5'],
          [1, '?durable=true&restore=true'],
          [1, '?durable=maybe&restore=%00'],
        ]);
        return `/v2/pty/sessions/${seg}/ws`;
      },
    ],
    [
      2,
      () => {
        // The anonymous socket creates a session unless the request is refused first.
        foreignSession = false;
        query = rng.weighted<string>([
          [3, '?durable=true'],
          [2, '?protocol=xml'],
          [2, '?replay_bytes=NaN'],
          [1, '?restore=1'],
          [1, ''],
        ]);
        return '/v2/pty/ws';
      },
    ],
    [
      4,
      () => {
        query = rng.weighted<string>([
          [5, `?session_id=${seg}`],
          [1, `?session_id=${seg}&protocol=xml`],
          [1, '?durable=true'],
          [1, '?session_id='],
        ]);
        // Without a session_id the socket gets a new session of the caller's own.
        if (!query.includes(`session_id=${seg}`)) foreignSession = false;
        return '/v1/shell/ws';
      },
    ],
    [
      6,
      () => {
        query = rng.weighted<string>([
          [5, ''],
          [1, '?takeover=1'],
          [1, '?since=-5'],
          [1, '?since=abc&pty=maybe'],
          [1, '?since=99999999999999999999'],
        ]);
        return `/pty/${seg}/ws`;
      },
    ],
    [
      3,
      () => {
        foreignSession = false;
        return '/api/events';
      },
    ],
    [
      4,
      () => {
        // A viewer resuming from a log offset (or a broken one).
        query = rng.weighted<string>([
          [6, ''],
          [1, '?since=0'],
          [1, '?since=-1'],
          [1, '?since=abc'],
          [1, '?since=1e3'],
          [1, '?since=99999999999999999999'],
        ]);
        return `/api/sessions/${seg}/view`;
      },
    ],
    [
      2,
      () => {
        // Person only: an agent gets 403; nothing about a session is at stake.
        foreignSession = false;
        return '/api/approvals/events';
      },
    ],
    [
      2,
      () => {
        // The deck socket: the person's only (an agent gets 403); no session in its path.
        foreignSession = false;
        return '/api/deck';
      },
    ],
    [
      3,
      () => {
        known = false;
        return rng.pick(['/ws', '/v2/pty/sessions/ws', `/v2/pty/sessions/${seg}/ws/extra`, `/pty/${seg}`, '/v3/pty/ws', '/api/events/x', '/', '/health', '/v1/shell/ws/..']);
      },
    ],
  ])();

  let credential: 'valid' | 'missing' | 'invalid' = 'valid';
  if (who === 'mallory') {
    const carrier = rng.weighted<string>([
      [5, 'bearer'],
      [2, 'x-api-key'],
      [2, 'query'],
      [1, 'execd'],
    ]);
    if (carrier === 'bearer') headers.Authorization = `Bearer ${w.tokens.mallory}`;
    else if (carrier === 'x-api-key') headers['x-api-key'] = w.tokens.mallory;
    else if (carrier === 'execd') {
      headers['X-EXECD-ACCESS-TOKEN'] = w.tokens.mallory;
      if (!path.startsWith('/pty/')) credential = 'missing';
    } else query += `${query ? '&' : '?'}api_key=${encodeURIComponent(w.tokens.mallory)}`;
  } else if (who === 'admin') headers.Authorization = `Bearer ${w.tokens.admin}`;
  else if (who === 'bad') {
    credential = 'invalid';
    if (rng.chance(0.5)) headers.Authorization = `Bearer pdk_${rng.ascii(30).replace(/\s/g, 'x')}`;
    else query += `${query ? '&' : '?'}api_key=${rng.pick(['garbage', 'x'.repeat(600), encodeURIComponent(w.tokens.mallory + 'x')])}`;
  } else credential = 'missing';

  // A broken handshake now and then (the WebSocket library's own refusals).
  const handshake = rng.weighted<UpgradeCase['handshake']>([
    [88, {}],
    [3, { key: 'not-a-key' }],
    [2, { key: null }],
    [3, { version: rng.pick(['99', '8x', '']) }],
    [2, { method: 'POST' }],
    [2, { version: null }],
  ]);
  const badHandshake = Object.keys(handshake).length > 0;
  // Dot segments in a hostile id can turn a known route into another, or into none.
  known = wsRouteKnown(path);
  if (normalizedPath(path) !== path) foreignSession = false;
  return {
    id: `upgrade#${index}`,
    path: path + query,
    headers,
    handshake,
    who,
    expect: { foreign: foreign ?? undefined, credential, foreignSession, known, badHandshake },
  };
}
