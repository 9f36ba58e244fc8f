import type { Rng } from './prng';
import { escapeCommand, pseudoDirs, SERVER_ENV_DIRS, type ViewerCredentials } from './control-gen';
import { dialectOf, type Dialect } from './oracle';
import type { HttpReq } from './transport';

/**
 * Generated hostile HTTP requests. Each case is built from the route catalogue below (every route of
 * docs/API.md, with its body's fields and their documented types), then broken: wrong types, missing and
 * extra fields, huge strings, invalid UTF-8, invalid JSON, unknown routes and methods, ids with traversal
 * and NUL bytes, cwd outside any sane path, absurd sizes, missing or bad credentials, a foreign Host or
 * Origin. Every case carries what the oracle needs to judge the answer (which fields were made invalid,
 * whether a credential was valid, whether the target belongs to someone else).
 *
 * SAFETY: the server runs real shells as this user. Nothing generated here is ever a command that does
 * anything: commands are from SAFE_COMMANDS or quoted text under printf; raw input only goes to "sink"
 * sessions whose program is `cat >/dev/null` in raw mode; interactive sessions only get safe commands.
 */
export type Who = 'mallory' | 'admin' | 'none' | 'bad';

export interface Pools {
  /** Sessions running SINK_PROGRAM: any byte may be written to them. */
  sinks: string[];
  /** Interactive shells: only SAFE_COMMANDS run there; nothing raw is typed. */
  interactive: string[];
  /** Lazy sessions that destructive requests may close. */
  doomed: string[];
  /** Bash-API sessions whose current command is BASH_SINK_COMMAND: any byte may be written to its stdin. */
  bash: string[];
}

export interface World {
  port: number;
  tokens: { admin: string; mallory: string };
  tmp: string;
  user: string;
  bodyLimit: number;
  inputLimit: number;
  live: string[];
  /** Percent-encoded near-misses of the live ids (case, NUL, trailing junk, traversal back to them). */
  liveVariants: string[];
  mallory: Pools;
  admin: Pools;
  /** The person's viewer session, for the cookie families (control-gen.ts). */
  viewer: ViewerCredentials;
}

/** A program that swallows anything typed at it and survives every signal but SIGKILL. */
export const SINK_PROGRAM = "trap '' INT TERM HUP QUIT TSTP; stty raw -echo; exec cat >/dev/null";

/** The bash API's sink: reads stdin into /dev/null, so anything written to it does nothing. */
export const BASH_SINK_COMMAND = 'exec cat >/dev/null';

/** A script the bash API may source before each command (created in the scratch directory at setup). */
export const SNAPSHOT_FILE = 'hostile-snapshot.sh';
export const SNAPSHOT_CONTENT = 'HOSTILE_SNAPSHOT=1\n';

export const SAFE_COMMANDS = ['true', ':', 'echo hostile-ok', 'printf "%s\\n" hostile', 'sleep 0.2', 'pwd', '(exit 3)', 'echo $((6*7))', 'false'];

const shellQuote = (s: string): string => `'${s.replace(/\0/g, '').replace(/'/g, `'\\''`)}'`;

export interface HttpCase {
  id: string;
  who: Who;
  route: string;
  dialect: Dialect;
  req: HttpReq;
  expect: {
    foreign?: 'host' | 'origin';
    /** Fields made certainly invalid (the answer must be a 4xx that names one of them). */
    invalid: string[];
    /** Some mutation's validity is not certain (e.g. a semantic check the route may or may not make). */
    uncertain: boolean;
    /** The body as a whole is broken: 'json' (not JSON), 'object' (JSON but not an object), 'size' (over the limit). */
    broken?: 'json' | 'object' | 'size';
    credential: 'valid' | 'missing' | 'invalid';
    publicRoute: boolean;
    /** The caller targets a session that is not its own (must never succeed). */
    foreignSession: boolean;
    /** An agent calls a route only the person may use (must never succeed). */
    personOnly?: boolean;
  };
}

// ---------------------------------------------------------------- the catalogue

type Spec =
  | { t: 'newId' }
  | { t: 'targetId' }
  | { t: 'dir'; lenient?: boolean }
  | { t: 'execdDir' }
  | { t: 'dim'; max: number }
  | { t: 'int' }
  | { t: 'secs' }
  | { t: 'waitSecs' }
  | { t: 'bool' }
  | { t: 'cmd' }
  | { t: 'execdCmd' }
  | { t: 'input' }
  | { t: 'enum'; values: string[] }
  | { t: 'env' }
  | { t: 'signal' }
  | { t: 'tokenName' }
  | { t: 'user' }
  | { t: 'loginToken' }
  | { t: 'title' }
  /** An agent to pause: never one the suite's sessions belong to (pausing them would turn the rest of the run into 423s). */
  | { t: 'dormantAgent' }
  /** A bash-API session id: the target's, where "" means "make a new one" (valid). */
  | { t: 'bashTarget' }
  /** A new bash-API session id, where "" is valid too. */
  | { t: 'bashNewId' }
  | { t: 'offset' }
  | { t: 'count' }
  | { t: 'bashSignal' }
  | { t: 'commandId' }
  | { t: 'snapshot' }
  | { t: 'remoteName' }
  | { t: 'remoteUrl' }
  | { t: 'remoteToken' }
  | { t: 'pem' }
  | { t: 'policyDefault' }
  | { t: 'rules' }
  | { t: 'note' };

interface Field {
  name: string;
  spec: Spec;
  required?: boolean;
  nullable?: boolean;
  /**
   * Never left out, not even by an empty body: without it the route acts on everything (POST /api/pause
   * with no agent pauses every agent, which would hold the suite's own sessions for the rest of the run).
   */
  keep?: boolean;
}

type Role = 'read' | 'write' | 'run' | 'create' | 'destroy' | 'floor' | 'tokens' | 'public' | 'list' | 'approvals';

/** Routes only the person's credential may use: an agent is refused (403), never served. */
const PERSON_ONLY: Role[] = ['floor', 'tokens', 'approvals'];

interface Route {
  name: string;
  method: string;
  path: string;
  role: Role;
  fields?: Field[];
  /** Where the session id goes: the path (:id) or the body's `id`. */
  target?: 'param' | 'body';
  /** Which of the caller's own sessions it targets, when not the role's usual pool. */
  pool?: 'bash';
  query?: (rng: Rng) => { q: string; invalid: string[]; uncertain: boolean };
}

const opt = (name: string, spec: Spec): Field => ({ name, spec, nullable: true });
/** Optional for the server, but always sent here (see Field.keep); null is refused. */
const kept = (name: string, spec: Spec): Field => ({ name, spec, keep: true });
/** Optional, but null is not a value for it. */
const optNotNull = (name: string, spec: Spec): Field => ({ name, spec });
const req = (name: string, spec: Spec): Field => ({ name, spec, required: true });

/** The value a JSON body carries in `field` (the last one, as a parser reads duplicates), if it parses. */
function sentField(body: Buffer | undefined, field: string): unknown {
  try {
    const parsed = body ? (JSON.parse(body.toString('utf8')) as unknown) : undefined;
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>)[field] : undefined;
  } catch {
    return undefined;
  }
}

/** What the server accepts as a new session's id (manager.ts SESSION_ID_PATTERN, restated: the suite judges from the docs). */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;

const MaxCols = 1000;
const MaxRows = 500;

export const ROUTES: Route[] = [
  // AIO v2
  {
    name: 'v2 create',
    method: 'POST',
    path: '/v2/pty/sessions',
    role: 'create',
    fields: [
      opt('id', { t: 'newId' }),
      opt('cwd', { t: 'dir' }),
      opt('cols', { t: 'dim', max: MaxCols }),
      opt('rows', { t: 'dim', max: MaxRows }),
      opt('env', { t: 'env' }),
      opt('user', { t: 'user' }),
      opt('retention', { t: 'enum', values: ['persistent', 'expiring'] }),
      opt('no_change_timeout', { t: 'int' }),
      opt('title', { t: 'title' }),
    ],
  },
  { name: 'v2 list', method: 'GET', path: '/v2/pty/sessions', role: 'list' },
  { name: 'v2 get', method: 'GET', path: '/v2/pty/sessions/:id', role: 'read', target: 'param' },
  { name: 'v2 patch', method: 'PATCH', path: '/v2/pty/sessions/:id', role: 'read', target: 'param', fields: [opt('cols', { t: 'dim', max: MaxCols }), opt('rows', { t: 'dim', max: MaxRows }), opt('no_change_timeout', { t: 'int' })] },
  { name: 'v2 delete', method: 'DELETE', path: '/v2/pty/sessions/:id', role: 'destroy', target: 'param' },
  {
    name: 'v2 exec',
    method: 'POST',
    path: '/v2/pty/sessions/:id/exec',
    role: 'run',
    target: 'param',
    fields: [req('command', { t: 'cmd' }), opt('async', { t: 'bool' }), opt('timeout', { t: 'secs' }), opt('hard_timeout', { t: 'secs' }), opt('no_change_timeout', { t: 'secs' })],
  },
  { name: 'v2 screen', method: 'GET', path: '/v2/pty/sessions/:id/screen', role: 'read', target: 'param' },
  { name: 'v2 input', method: 'POST', path: '/v2/pty/sessions/:id/input', role: 'write', target: 'param', fields: [req('input', { t: 'input' }), opt('press_enter', { t: 'bool' })] },
  { name: 'v2 wait', method: 'POST', path: '/v2/pty/sessions/:id/wait', role: 'read', target: 'param', fields: [opt('seconds', { t: 'waitSecs' })] },
  {
    name: 'v2 wait GET',
    method: 'GET',
    path: '/v2/pty/sessions/:id/wait',
    role: 'read',
    target: 'param',
    query: (rng) =>
      rng.weighted<{ q: string; invalid: string[]; uncertain: boolean }>([
        [2, { q: '', invalid: [], uncertain: false }],
        [2, { q: '?seconds=0.2', invalid: [], uncertain: false }],
        [1, { q: '?seconds=abc', invalid: ['seconds'], uncertain: false }],
        [1, { q: '?seconds=-1', invalid: ['seconds'], uncertain: false }],
        [1, { q: '?seconds=1e999', invalid: ['seconds'], uncertain: false }],
        [1, { q: '?seconds=99999999', invalid: ['seconds'], uncertain: false }],
        [1, { q: '?seconds=1&seconds=2', invalid: ['seconds'], uncertain: false }],
        [1, { q: '?seconds=%00', invalid: ['seconds'], uncertain: false }],
        [1, { q: '?seconds=0x1', invalid: [], uncertain: true }],
        [1, { q: '?seconds=', invalid: [], uncertain: true }],
        [1, { q: '?seconds[]=1', invalid: [], uncertain: true }],
      ]),
  },
  { name: 'v2 signal', method: 'POST', path: '/v2/pty/sessions/:id/signal', role: 'destroy', target: 'param', fields: [opt('signal', { t: 'signal' })] },
  // AIO v1
  {
    name: 'v1 exec',
    method: 'POST',
    path: '/v1/shell/exec',
    role: 'run',
    target: 'body',
    fields: [
      opt('id', { t: 'targetId' }),
      opt('exec_dir', { t: 'dir', lenient: true }),
      req('command', { t: 'cmd' }),
      opt('async_mode', { t: 'bool' }),
      opt('timeout', { t: 'secs' }),
      opt('strict', { t: 'bool' }),
      opt('no_change_timeout', { t: 'secs' }),
      opt('hard_timeout', { t: 'secs' }),
      opt('preserve_symlinks', { t: 'bool' }),
      opt('truncate', { t: 'bool' }),
    ],
  },
  { name: 'v1 view', method: 'POST', path: '/v1/shell/view', role: 'read', target: 'body', fields: [req('id', { t: 'targetId' })] },
  { name: 'v1 wait', method: 'POST', path: '/v1/shell/wait', role: 'read', target: 'body', fields: [req('id', { t: 'targetId' }), opt('seconds', { t: 'waitSecs' }), opt('max_wait_seconds', { t: 'waitSecs' })] },
  { name: 'v1 write', method: 'POST', path: '/v1/shell/write', role: 'write', target: 'body', fields: [req('id', { t: 'targetId' }), req('input', { t: 'input' }), opt('press_enter', { t: 'bool' })] },
  { name: 'v1 kill', method: 'POST', path: '/v1/shell/kill', role: 'destroy', target: 'body', fields: [req('id', { t: 'targetId' })] },
  { name: 'v1 create', method: 'POST', path: '/v1/shell/sessions/create', role: 'create', fields: [opt('id', { t: 'newId' }), opt('exec_dir', { t: 'dir' }), opt('no_change_timeout', { t: 'int' }), opt('preserve_symlinks', { t: 'bool' })] },
  { name: 'v1 update', method: 'POST', path: '/v1/shell/sessions/update', role: 'read', target: 'body', fields: [req('id', { t: 'targetId' }), opt('no_change_timeout', { t: 'int' })] },
  { name: 'v1 list', method: 'GET', path: '/v1/shell/sessions', role: 'list' },
  { name: 'v1 delete one', method: 'DELETE', path: '/v1/shell/sessions/:id', role: 'destroy', target: 'param' },
  { name: 'v1 stats', method: 'GET', path: '/v1/shell/sessions/stats', role: 'list' },
  {
    name: 'v1 terminal-url',
    method: 'GET',
    path: '/v1/shell/terminal-url',
    role: 'read',
    target: 'param',
    // The id goes in ?session_id= (filled in by the generator); without one the route creates a session.
  },
  { name: 'v1 capabilities', method: 'GET', path: '/v1/capabilities', role: 'list' },
  // AIO v1 bash (pipes)
  {
    name: 'bash exec',
    method: 'POST',
    path: '/v1/bash/exec',
    role: 'run',
    target: 'body',
    pool: 'bash',
    fields: [
      opt('session_id', { t: 'bashTarget' }),
      req('command', { t: 'cmd' }),
      opt('exec_dir', { t: 'dir' }),
      opt('env', { t: 'env' }),
      opt('async_mode', { t: 'bool' }),
      opt('timeout', { t: 'secs' }),
      opt('hard_timeout', { t: 'secs' }),
      opt('max_output_length', { t: 'count' }),
    ],
  },
  {
    name: 'bash output',
    method: 'POST',
    path: '/v1/bash/output',
    role: 'read',
    target: 'body',
    pool: 'bash',
    fields: [req('session_id', { t: 'targetId' }), opt('command_id', { t: 'commandId' }), opt('offset', { t: 'offset' }), opt('stderr_offset', { t: 'offset' }), opt('wait', { t: 'bool' }), opt('wait_timeout', { t: 'waitSecs' })],
  },
  { name: 'bash write', method: 'POST', path: '/v1/bash/write', role: 'write', target: 'body', pool: 'bash', fields: [req('session_id', { t: 'targetId' }), req('input', { t: 'input' }), opt('command_id', { t: 'commandId' })] },
  { name: 'bash kill', method: 'POST', path: '/v1/bash/kill', role: 'write', target: 'body', pool: 'bash', fields: [req('session_id', { t: 'targetId' }), opt('signal', { t: 'bashSignal' })] },
  { name: 'bash list', method: 'GET', path: '/v1/bash/sessions', role: 'list' },
  { name: 'bash create', method: 'POST', path: '/v1/bash/sessions/create', role: 'create', fields: [opt('session_id', { t: 'bashNewId' }), opt('exec_dir', { t: 'dir' }), opt('snapshot_path', { t: 'snapshot' })] },
  { name: 'bash close', method: 'POST', path: '/v1/bash/sessions/:id/close', role: 'destroy', target: 'param' },
  { name: 'v1 ping', method: 'GET', path: '/v1/ping', role: 'public' },
  { name: 'health', method: 'GET', path: '/health', role: 'public' },
  // execd
  { name: 'execd create', method: 'POST', path: '/pty', role: 'create', fields: [opt('cwd', { t: 'execdDir' }), opt('command', { t: 'execdCmd' })] },
  { name: 'execd get', method: 'GET', path: '/pty/:id', role: 'read', target: 'param' },
  { name: 'execd ws plain GET', method: 'GET', path: '/pty/:id/ws', role: 'read', target: 'param' },
  { name: 'execd delete', method: 'DELETE', path: '/pty/:id', role: 'destroy', target: 'param' },
  // native
  { name: 'whoami', method: 'GET', path: '/api/whoami', role: 'list' },
  { name: 'native list', method: 'GET', path: '/api/sessions', role: 'list' },
  { name: 'native create', method: 'POST', path: '/api/sessions', role: 'create', fields: [opt('id', { t: 'newId' }), opt('cwd', { t: 'dir' }), opt('cols', { t: 'dim', max: MaxCols }), opt('rows', { t: 'dim', max: MaxRows }), opt('env', { t: 'env' }), opt('title', { t: 'title' })] },
  { name: 'native get', method: 'GET', path: '/api/sessions/:id', role: 'read', target: 'param' },
  // Renaming changes a label, not the terminal: a 'read' for which sessions it may aim at.
  { name: 'native rename', method: 'PATCH', path: '/api/sessions/:id', role: 'read', target: 'param', fields: [{ name: 'title', spec: { t: 'title' }, required: true, nullable: true }] },
  { name: 'native delete', method: 'DELETE', path: '/api/sessions/:id', role: 'destroy', target: 'param' },
  { name: 'takeover', method: 'POST', path: '/api/sessions/:id/takeover', role: 'floor', target: 'param' },
  { name: 'release', method: 'POST', path: '/api/sessions/:id/release', role: 'floor', target: 'param' },
  { name: 'interrupt', method: 'POST', path: '/api/sessions/:id/interrupt', role: 'floor', target: 'param' },
  { name: 'floor', method: 'POST', path: '/api/sessions/:id/floor', role: 'floor', target: 'param', fields: [req('mode', { t: 'enum', values: ['watch', 'type', 'takeover'] })] },
  // The deck (person only): an agent's token gets 403.
  { name: 'pause state', method: 'GET', path: '/api/pause', role: 'floor' },
  { name: 'pause', method: 'POST', path: '/api/pause', role: 'floor', fields: [kept('agent', { t: 'dormantAgent' })] },
  { name: 'resume', method: 'POST', path: '/api/resume', role: 'floor', fields: [kept('agent', { t: 'dormantAgent' })] },
  { name: 'interrupt agent', method: 'POST', path: '/api/interrupt', role: 'floor', fields: [kept('agent', { t: 'dormantAgent' })] },
  // timeline and recordings (src/main/timeline)
  { name: 'timeline', method: 'GET', path: '/api/sessions/:id/timeline', role: 'read', target: 'param', query: (rng) => timelineQuery(rng, false) },
  { name: 'recording', method: 'GET', path: '/api/sessions/:id/recording', role: 'read', target: 'param' },
  { name: 'audit', method: 'GET', path: '/api/audit', role: 'list', query: (rng) => timelineQuery(rng, true) },
  { name: 'recordings list', method: 'GET', path: '/api/recordings', role: 'list' },
  { name: 'recording by key', method: 'GET', path: '/api/recordings/:key', role: 'list' },
  { name: 'recording timeline by key', method: 'GET', path: '/api/recordings/:key/timeline', role: 'list', query: (rng) => timelineQuery(rng, false) },
  { name: 'recording delete', method: 'DELETE', path: '/api/recordings/:key', role: 'list' },
  { name: 'token create', method: 'POST', path: '/api/tokens', role: 'tokens', fields: [req('name', { t: 'tokenName' })] },
  { name: 'token list', method: 'GET', path: '/api/tokens', role: 'tokens' },
  { name: 'token revoke', method: 'DELETE', path: '/api/tokens/:name', role: 'tokens' },
  { name: 'login', method: 'POST', path: '/api/login', role: 'public', fields: [req('token', { t: 'loginToken' })] },
  // remotes (the person's only). Generated URLs never reach a real host: a refused loopback port or
  // TEST-NET-1 (192.0.2.0/24, never routed); the store caps how many are kept.
  { name: 'remotes list', method: 'GET', path: '/api/remotes', role: 'tokens' },
  {
    name: 'remote add',
    method: 'POST',
    path: '/api/remotes',
    role: 'tokens',
    fields: [
      req('name', { t: 'remoteName' }),
      req('url', { t: 'remoteUrl' }),
      req('token', { t: 'remoteToken' }),
      optNotNull('kind', { t: 'enum', values: ['ptydeck', 'aio'] }),
      optNotNull('insecure', { t: 'bool' }),
      optNotNull('ca', { t: 'pem' }),
    ],
  },
  { name: 'remote remove', method: 'DELETE', path: '/api/remotes/:name', role: 'tokens' },
  { name: 'remote retry', method: 'POST', path: '/api/remotes/:name/retry', role: 'tokens' },
  // Approvals (src/main/approvals/door.ts): person only.
  { name: 'policy get', method: 'GET', path: '/api/policy', role: 'approvals' },
  { name: 'policy put', method: 'PUT', path: '/api/policy', role: 'approvals', fields: [opt('default', { t: 'policyDefault' }), opt('rules', { t: 'rules' })] },
  { name: 'approvals list', method: 'GET', path: '/api/approvals', role: 'approvals' },
  { name: 'approve', method: 'POST', path: '/api/approvals/:aid/approve', role: 'approvals', fields: [opt('note', { t: 'note' }), opt('remember', { t: 'bool' })] },
  { name: 'deny', method: 'POST', path: '/api/approvals/:aid/deny', role: 'approvals', fields: [opt('reason', { t: 'note' })] },
  { name: 'approval takeover', method: 'POST', path: '/api/approvals/:aid/takeover', role: 'approvals', fields: [opt('reason', { t: 'note' })] },
];

/**
 * Rule patterns for generated policies. None can match anything this suite types (SAFE_COMMANDS, printf
 * of random text, comments) with any real chance: a policy the admin saves here must never hold the
 * suite's own commands, whose calls would then wait for a person.
 */
const INERT_PATTERNS = ['^ptydeck-hostile-never-[0-9]{6}$', '\\bzz-hostile-nomatch\\b', '(?:qqq-hostile){2}', '^$never'];
const AGENT_NAMES = ['mallory', 'someone', 'a.b-c_d'];

/** `since`, `limit` (and `agent` on /api/audit): valid values, and ones certainly invalid. */
function timelineQuery(rng: Rng, audit: boolean): { q: string; invalid: string[]; uncertain: boolean } {
  const options: [number, { q: string; invalid: string[]; uncertain: boolean }][] = [
    [3, { q: '', invalid: [], uncertain: false }],
    [2, { q: `?since=${rng.int(0, 1e6)}`, invalid: [], uncertain: false }],
    [1, { q: '?since=2026-01-01T00:00:00Z', invalid: [], uncertain: false }],
    [1, { q: `?limit=${rng.int(1, 5000)}`, invalid: [], uncertain: false }],
    [1, { q: '?since=-1', invalid: ['since'], uncertain: false }],
    [1, { q: '?since=yesterday', invalid: ['since'], uncertain: false }],
    [1, { q: '?since=1e999', invalid: ['since'], uncertain: false }],
    [1, { q: `?since=${'9'.repeat(40)}`, invalid: ['since'], uncertain: false }],
    [1, { q: '?since=1&since=2', invalid: ['since'], uncertain: false }],
    [1, { q: '?since=%00', invalid: ['since'], uncertain: false }],
    [1, { q: '?since=2026-13-45T99:99:99Z', invalid: ['since'], uncertain: false }],
    [1, { q: '?limit=0', invalid: ['limit'], uncertain: false }],
    [1, { q: '?limit=5001', invalid: ['limit'], uncertain: false }],
    [1, { q: '?limit=abc', invalid: ['limit'], uncertain: false }],
    [1, { q: '?limit=1.5', invalid: ['limit'], uncertain: false }],
    [1, { q: '?since[]=1', invalid: [], uncertain: true }],
    [1, { q: '?__proto__[polluted]=yes', invalid: [], uncertain: true }],
  ];
  if (audit) {
    options.push(
      [2, { q: `?agent=${rng.pick(['mallory', 'admin', 'nobody-here', 'claude'])}`, invalid: [], uncertain: false }],
      [1, { q: `?agent=${rng.pick(['..%2F..', '%00', 'a%20b', '-x', 'x'.repeat(70), '%E2%98%83'])}`, invalid: ['agent'], uncertain: false }],
      [1, { q: '?agent=mallory&agent=admin', invalid: ['agent'], uncertain: false }],
    );
  }
  return rng.weighted(options);
}

/** Recording keys for `:key`: well-formed ones that name nothing, and hostile ones. */
const RECORDING_KEYS = ['mabc1234-abcdef', 'zzzzzzzz-000000', '..', '%2e%2e', '..%2F..%2Ftokens.json', 'a%00b', '%00', 'x'.repeat(300), '%ZZ', '__proto__', 'constructor', '*', 'mabc1234-abcdef.cast', 'MABC1234-ABCDEF', '%0D%0ASet-Cookie%3A%20x%3Dy'];

const PUBLIC_PATHS = [/^\/health$/, /^\/v1\/ping$/, /^\/$/, /^\/terminal$/, /^\/assets\//, /^\/favicon\.(ico|svg)$/, /^\/api\/login$/];
export const isPublicPath = (target: string): boolean => PUBLIC_PATHS.some((re) => re.test(target.split('?')[0]));

// ---------------------------------------------------------------- hostile values

/** Path segments for :id, already percent-encoded as sent. Some are D1 reproductions (bad %-encoding, > 256 chars). */
export const HOSTILE_SEGMENTS = [
  '..',
  '.',
  '%2e%2e',
  '..%2F..%2Fetc%2Fpasswd',
  '%2F',
  'a%00b',
  '%00',
  'live-a%00',
  'live-b%2F..%2Flive-b',
  'LIVE-A',
  'live-a%20',
  '%20live-b',
  'x'.repeat(200),
  'y'.repeat(300),
  '%E2%98%83',
  '%F0%9F%92%A9',
  '%ff%fe',
  '%E0%A4%A',
  '%ZZ',
  '%252e%252e',
  '*',
  '%24(id)',
  '%60id%60',
  '%3Bls',
  'null',
  'undefined',
  '0',
  '-1',
  'constructor',
  '__proto__',
  'hasOwnProperty',
  'live-a%3B',
  'live-b%0A',
  '%0D%0ASet-Cookie%3A%20x%3Dy',
  '..%5C..%5Cwindows',
  'a'.repeat(128),
  '%C0%AE%C0%AE',
];

/** Ids as body strings (JSON-encoded, so any code point goes). */
export const HOSTILE_BODY_IDS = ['../../etc/passwd', 'a\0b', '\0', 'live-a\0', 'live-a ', 'LIVE-B', '__proto__', 'constructor', '☃', 'a b', '-rf', '$(id)', '`id`', '.', '..', 'live-a/../live-b', '\ud800', 'x'.repeat(128)];

export function foreignHosts(port: number): string[] {
  return [
    'evil.example',
    `evil.example:${port}`,
    `127.0.0.1.evil.example:${port}`,
    `localhost.evil.example:${port}`,
    `127.0.0.1:${port + 1}`,
    '127.0.0.1',
    'localhost',
    `localhost:${port}0`,
    `127.0.0.2:${port}`,
    `0.0.0.0:${port}`,
    `[::2]:${port}`,
    `127.1:${port}`,
    `2130706433:${port}`,
    `localhost:${port}:${port}`,
    `user@localhost:${port}`,
    `localhost.:${port}`,
    `[::1`,
    'evil.example:80',
    `${port}`,
  ];
}

export function foreignOrigins(port: number): string[] {
  return [
    'http://evil.example',
    `http://evil.example:${port}`,
    `https://127.0.0.1:${port}`,
    `http://127.0.0.1:${port + 1}`,
    'null',
    'file://',
    `ws://127.0.0.1:${port}`,
    `http://localhost.evil.example:${port}`,
    'chrome-extension://abcdefghijklmnop',
    `http://127.0.0.1:${port}.evil.example`,
    `http://[::1]:${port + 1}`,
    '',
    `http://127.0.0.1:${port}@evil.example`,
  ];
}

const BAD_DIMS: [unknown, string][] = [
  [0, 'zero'],
  [-1, 'negative'],
  [-2147483648, 'int32 min'],
  [2147483648, 'int32 max+1'],
  [2 ** 53 + 2, 'beyond 2^53'],
  [1e308, '1e308'],
  [1.5, 'fraction'],
  ['80', 'numeric string'],
  [true, 'boolean'],
  [[80], 'array'],
  [{ cols: 80 }, 'object'],
];

/** A huge string: 2 KiB to ~900 KiB (kept under the body limit by the caller). */
function huge(rng: Rng, limit: number): string {
  const n = rng.weighted<number>([
    [3, rng.int(2048, 16384)],
    [2, rng.int(16384, 200_000)],
    [1, rng.int(200_000, Math.max(200_001, Math.floor(limit * 0.85)))],
  ]);
  return rng.pick(['x', 'é', '☃', '\u0000', 'ab']).repeat(Math.ceil(n / 2)).slice(0, n);
}

interface Mutation {
  value: unknown;
  /** true: certainly invalid; false: valid; 'unknown': the route's answer decides. */
  invalid: boolean | 'unknown';
  label: string;
}

const MISSING = Symbol('missing');

function validValue(spec: Spec, rng: Rng, w: World, ctx: { target?: string }): unknown {
  switch (spec.t) {
    case 'newId':
      return rng.pick([`h-${rng.int(0, 1e9)}`, `H.${rng.int(0, 1e6)}:x@y-z_${rng.int(0, 99)}`, `h${'0'.repeat(100)}${rng.int(0, 9)}`]);
    case 'targetId':
      return ctx.target ?? `nope-${rng.int(0, 1e6)}`;
    case 'dir':
      return rng.pick([w.tmp, '/tmp', '/', '/proc', '/dev', '/sys', '/etc', '~', `${w.tmp}/../..`, '//', '/proc/self/cwd']);
    case 'execdDir':
      return rng.pick([w.tmp, '/tmp', '/', `${w.tmp}/sub-${rng.int(0, 20)}`, '$HOME', '~', `${w.tmp}/../..`, '', null]);
    case 'dim':
      return rng.pick([1, spec.max, rng.int(1, spec.max), 80, 24]);
    case 'int':
      return rng.pick([0, 1, 604800, rng.int(0, 604800)]);
    case 'secs':
      return rng.pick([0, 0.5, 1e-9, 30, 604800, rng.int(0, 1000) / 10]);
    case 'waitSecs':
      return rng.pick([0, 0.1, 0.3]);
    case 'bool':
      return rng.pick([true, false]);
    case 'cmd':
      return rng.weighted<string>([
        [6, rng.pick(SAFE_COMMANDS)],
        // Processes that shed parent, session and environment before the session closes (control-gen.ts).
        [1, escapeCommand(rng)],
        [2, `printf %s ${shellQuote(rng.unicode(rng.int(1, 64)))}`],
        [1, `# ${rng.ascii(rng.int(1, 200)).replace(/[\r\n]/g, ' ')}`],
      ]);
    case 'execdCmd':
      return rng.pick([SINK_PROGRAM, 'true', `printf %s ${shellQuote(rng.ascii(20))}`, null]);
    case 'input':
      return rng.weighted<string>([
        [3, rng.unicode(rng.int(0, 300))],
        [2, rng.bytes(rng.int(1, 200)).toString('latin1')],
        [1, '\x03\x04\x1a\x1c'],
        [1, '\x1b[6n\x1b]11;?\x07\x1b[c'],
        [1, ''],
      ]);
    case 'enum':
      return rng.pick(spec.values);
    case 'env':
      return { [`HOSTILE_${rng.int(0, 99)}`]: rng.ascii(rng.int(0, 64)).replace(/\0/g, '') };
    case 'signal':
      return rng.pick(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'sigint', 'SIGKILL']);
    case 'tokenName':
      return `h${rng.int(0, 1e9)}`;
    case 'user':
      return w.user;
    case 'loginToken':
      return rng.pick([rng.ascii(rng.int(1, 100)), `pdk_${rng.ascii(32)}`]);
    case 'title':
      return rng.pick(['', 'build: staging', `h title ${rng.int(0, 1e6)}`, 'ü☃ 名前 '.repeat(3), 'x'.repeat(120), rng.unicode(rng.int(1, 40)).replace(/[\u0000-\u001f\u007f-\u009f]/g, 'x').slice(0, 60)]);
    case 'dormantAgent':
      return rng.pick(['dormant', `dormant-${rng.int(0, 20)}`, 'nobody.here_1']);
    case 'bashTarget':
      return ctx.target ?? '';
    case 'bashNewId':
      return rng.pick(['', `hb-${rng.int(0, 1e9)}`]);
    case 'offset':
      return rng.pick([0, 1, rng.int(0, 1e6), Number.MAX_SAFE_INTEGER]);
    case 'count':
      return rng.pick([0, 1, 100, 50000, rng.int(0, 1e7)]);
    case 'bashSignal':
      return rng.pick(['SIGTERM', 'SIGINT', 'SIGKILL', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2']);
    case 'commandId':
      return rng.pick([crypto.randomUUID(), `c-${rng.int(0, 99)}`, '']);
    case 'snapshot':
      return `${w.tmp}/${SNAPSHOT_FILE}`;
    case 'remoteName':
      return `h${rng.int(0, 1e9)}`;
    case 'remoteUrl':
      return rng.pick(['http://127.0.0.1:1', `https://192.0.2.${rng.int(1, 254)}`, `https://192.0.2.${rng.int(1, 254)}:8791/deck`, 'http://localhost:1']);
    case 'remoteToken':
      return `pdk_${rng.ascii(32).replace(/[^\x21-\x7e]/g, 'x')}`;
    case 'pem':
      // No valid certificate is generated: leave the field out.
      return null;
    // Never "ask": that would hold every agent command of the suite for a person.
    case 'policyDefault':
      return 'allow';
    case 'rules':
      return Array.from({ length: rng.int(0, 4) }, () => ({
        pattern: rng.pick(INERT_PATTERNS),
        action: rng.pick(['ask', 'deny', 'allow']),
        ...(rng.chance(0.3) ? { agent: rng.pick(AGENT_NAMES) } : {}),
      }));
    case 'note':
      return rng.pick(['', 'no', rng.unicode(rng.int(1, 200)), `${rng.ascii(40)}\r\n\x1b[31m`]);
  }
}

function mutateValue(f: Field, rng: Rng, w: World, who: Who): Mutation {
  const spec = f.spec;
  const generic: Mutation[] = [
    ...(f.keep ? [] : [{ value: MISSING, invalid: f.required ? true : false, label: 'missing' }]),
    { value: null, invalid: f.nullable ? false : true, label: 'null' },
    { value: [], invalid: spec.t !== 'rules', label: 'empty array' },
    { value: {}, invalid: spec.t === 'env' ? false : true, label: 'empty object' },
    { value: { $gt: '' }, invalid: true, label: 'operator object' },
  ];
  const isString = ['newId', 'targetId', 'dir', 'execdDir', 'cmd', 'execdCmd', 'input', 'enum', 'signal', 'tokenName', 'user', 'loginToken', 'bashTarget', 'bashNewId', 'bashSignal', 'commandId', 'snapshot', 'remoteName', 'remoteUrl', 'remoteToken', 'pem', 'policyDefault', 'note', 'title', 'dormantAgent'].includes(spec.t);
  const isNumber = ['dim', 'int', 'secs', 'waitSecs', 'offset', 'count'].includes(spec.t);
  if (isString) generic.push({ value: rng.pick([0, -1, 1.5, 1e308]), invalid: true, label: 'number for a string' }, { value: true, invalid: true, label: 'boolean for a string' });
  if (isNumber) generic.push({ value: rng.pick(['1', 'abc', '', '1e3', 'NaN', 'Infinity']), invalid: true, label: 'string for a number' }, { value: false, invalid: true, label: 'boolean for a number' });
  if (spec.t === 'bool') generic.push({ value: rng.pick(['true', 'false', 1, 0, 'yes']), invalid: true, label: 'not a boolean' });
  if (spec.t === 'env') generic.push({ value: rng.pick(['A=B', 5, true]), invalid: true, label: 'env not an object' });

  const specific: Mutation[] = [];
  const lim = w.bodyLimit;
  switch (spec.t) {
    case 'newId':
      specific.push(
        { value: '', invalid: true, label: 'empty id' },
        { value: 'x'.repeat(129), invalid: true, label: 'id over 128' },
        { value: huge(rng, lim), invalid: true, label: 'huge id' },
        { value: rng.pick(HOSTILE_BODY_IDS.filter((s) => s.length <= 128)), invalid: 'unknown', label: 'hostile id' },
      );
      // Mallory asking for a live id answers 400 (taken); the admin never touches live sessions.
      if (who !== 'admin') specific.push({ value: rng.pick(w.live), invalid: 'unknown', label: "another principal's id" });
      break;
    case 'targetId':
      specific.push(
        { value: '', invalid: true, label: 'empty id' },
        { value: 'x'.repeat(129), invalid: true, label: 'id over 128' },
        { value: huge(rng, lim), invalid: true, label: 'huge id' },
        { value: rng.pick(HOSTILE_BODY_IDS), invalid: 'unknown', label: 'hostile id' },
      );
      break;
    case 'dir': {
      const semantic = spec.lenient ? 'unknown' : true;
      specific.push(
        { value: '', invalid: true, label: 'empty path' },
        { value: '/'.repeat(4097), invalid: true, label: 'path over 4096' },
        { value: huge(rng, lim), invalid: true, label: 'huge path' },
        { value: `${w.tmp}\0/../etc`, invalid: true, label: 'NUL in path' },
        { value: 'relative/dir', invalid: semantic, label: 'relative path' },
        { value: '../../../../etc', invalid: semantic, label: 'traversal' },
        { value: `/nonexistent-${rng.int(0, 1e6)}/x`, invalid: semantic, label: 'missing directory' },
        { value: '/etc/passwd', invalid: semantic, label: 'a file, not a directory' },
        { value: '~root', invalid: semantic, label: '~user' },
        { value: '$HOME', invalid: semantic, label: 'unexpanded variable' },
        { value: '/proc/self/fd/0', invalid: 'unknown', label: 'a tty, not a directory' },
        { value: rng.pick(pseudoDirs(w.tmp)), invalid: semantic, label: 'a missing directory on a pseudo-filesystem' },
      );
      break;
    }
    case 'execdDir':
      specific.push(
        { value: 'x'.repeat(4097), invalid: true, label: 'path over 4096' },
        { value: `${w.tmp}/a\0b`, invalid: true, label: 'NUL in cwd' },
        { value: 'relative/dir', invalid: true, label: 'relative cwd' },
        { value: '$PTYDECK_HOSTILE_UNDEFINED/x', invalid: true, label: 'undefined variable' },
        { value: '${PTYDECK_HOSTILE_UNDEFINED}', invalid: true, label: 'undefined ${variable}' },
        { value: '/etc/passwd/x', invalid: true, label: 'under a file' },
        { value: `${w.tmp}/${'n'.repeat(300)}`, invalid: true, label: 'component over NAME_MAX' },
        { value: '/proc/hostile-dir', invalid: true, label: 'uncreatable' },
        { value: rng.pick(pseudoDirs(w.tmp)), invalid: true, label: 'on a pseudo-filesystem' },
        { value: rng.pick(SERVER_ENV_DIRS), invalid: true, label: "a variable of the server's environment" },
      );
      break;
    case 'dim':
      for (const [v, label] of BAD_DIMS) specific.push({ value: v, invalid: true, label });
      specific.push({ value: spec.max + 1, invalid: true, label: 'max+1' }, { value: -0, invalid: true, label: 'minus zero' });
      break;
    case 'int':
      specific.push({ value: -1, invalid: true, label: 'negative' }, { value: 604801, invalid: true, label: 'over a week' }, { value: 1.5, invalid: true, label: 'fraction' }, { value: 1e308, invalid: true, label: '1e308' });
      break;
    case 'secs':
    case 'waitSecs':
      specific.push({ value: -1, invalid: true, label: 'negative' }, { value: -1e-9, invalid: true, label: 'tiny negative' }, { value: 604801, invalid: true, label: 'over a week' }, { value: 1e308, invalid: true, label: '1e308' });
      break;
    case 'cmd':
      specific.push(
        { value: '', invalid: true, label: 'empty command' },
        { value: '   \t', invalid: true, label: 'blank command' },
        { value: '\n\n', invalid: true, label: 'newlines only' },
        { value: `# ${huge(rng, lim).replace(/[\0\r\n]/g, 'x')}`, invalid: false, label: 'huge comment' },
      );
      break;
    case 'execdCmd':
      specific.push({ value: 'x'.repeat(1024 * 1024 + 1), invalid: true, label: 'command over 1 MiB' });
      break;
    case 'input':
      specific.push(
        { value: 'z'.repeat(w.inputLimit + 1), invalid: true, label: 'input over the limit' },
        { value: rng.pick(['é', '☃']).repeat(Math.ceil(w.inputLimit / 2) + 1), invalid: true, label: 'multibyte input over the limit' },
      );
      break;
    case 'enum':
      specific.push({ value: rng.pick(['forever', '', 'PERSISTENT', 'Watch', 'take over']), invalid: true, label: 'not one of the values' });
      break;
    case 'env':
      specific.push(
        { value: { '1A': 'x' }, invalid: true, label: 'name starting with a digit' },
        { value: { 'A B': 'x' }, invalid: true, label: 'space in name' },
        { value: { '': 'x' }, invalid: true, label: 'empty name' },
        { value: { HOSTILE_X: 5 }, invalid: true, label: 'number value' },
        { value: { HOSTILE_X: 'a\0b' }, invalid: true, label: 'NUL in value' },
        { value: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`HOSTILE_${i}`, 'v'])), invalid: true, label: '300 variables' },
        { value: { HOSTILE_BIG: huge(rng, lim).replace(/\0/g, 'x') }, invalid: false, label: 'huge value' },
      );
      break;
    case 'signal':
      specific.push({ value: rng.pick(['SIGFOO', 'SIGSTOP', '9', 'KILL', '']), invalid: true, label: 'not a signal we send' }, { value: 'SIG'.repeat(6), invalid: true, label: 'over 16 chars' }, { value: 9, invalid: true, label: 'a number' });
      break;
    case 'tokenName':
      specific.push(
        { value: '', invalid: true, label: 'empty name' },
        { value: '../etc', invalid: true, label: 'traversal name' },
        { value: 'admin', invalid: true, label: 'reserved name' },
        { value: 'a'.repeat(65), invalid: true, label: 'name over 64' },
        { value: 'mallory', invalid: 'unknown', label: 'existing name' },
        { value: '-x', invalid: true, label: 'leading dash' },
      );
      break;
    case 'user':
      specific.push({ value: 'nobody-hostile', invalid: true, label: 'another user' }, { value: 'u'.repeat(257), invalid: true, label: 'user over 256' });
      break;
    case 'loginToken':
      specific.push({ value: '', invalid: true, label: 'empty token' }, { value: 't'.repeat(513), invalid: true, label: 'token over 512' });
      break;
    case 'title':
      specific.push(
        { value: rng.pick(['two\nlines', 'esc\x1b]0;owned\x07', 'tab\there', 'nul\0', 'c1\u009b31m', 'bell\x07']), invalid: true, label: 'control character in a title' },
        { value: 'x'.repeat(121), invalid: true, label: 'title over 120 characters' },
        { value: huge(rng, lim).replace(/\0/g, 'x'), invalid: true, label: 'huge title' },
        { value: '   ', invalid: false, label: 'blank title (clears it)' },
      );
      break;
    case 'dormantAgent':
      specific.push(
        { value: 'admin', invalid: true, label: "the person's own name" },
        { value: '', invalid: true, label: 'empty agent' },
        { value: rng.pick(['../etc', 'a b', '-x', 'x'.repeat(65), 'é']), invalid: true, label: 'not an agent name' },
        { value: huge(rng, lim), invalid: true, label: 'huge agent' },
      );
      break;
    case 'bashTarget':
    case 'bashNewId':
      // "" asks for a new session (as AIO reads it): valid. A bad id on a route that creates is refused.
      specific.push(
        { value: '', invalid: false, label: 'empty id: a new session' },
        { value: 'x'.repeat(129), invalid: true, label: 'id over 128' },
        { value: huge(rng, lim), invalid: true, label: 'huge id' },
        { value: rng.pick(HOSTILE_BODY_IDS.filter((v) => v.length <= 128)), invalid: 'unknown', label: 'hostile id' },
      );
      if (who !== 'admin') specific.push({ value: rng.pick(w.live), invalid: 'unknown', label: "another principal's id" });
      break;
    case 'offset':
      specific.push({ value: -1, invalid: true, label: 'negative' }, { value: 1.5, invalid: true, label: 'fraction' }, { value: 1e308, invalid: true, label: '1e308' }, { value: 2 ** 53 + 2, invalid: true, label: 'beyond 2^53' });
      break;
    case 'count':
      specific.push({ value: -1, invalid: true, label: 'negative' }, { value: 0.5, invalid: true, label: 'fraction' }, { value: 1e308, invalid: true, label: '1e308' });
      break;
    case 'bashSignal':
      specific.push({ value: rng.pick(['SIGFOO', 'SIGSTOP', '9', 'KILL', '', 'sigterm', 'SIGTERM ']), invalid: true, label: 'not a signal kill sends' }, { value: 15, invalid: true, label: 'a number' });
      break;
    case 'commandId':
      specific.push({ value: 'c'.repeat(129), invalid: true, label: 'id over 128' }, { value: huge(rng, lim), invalid: true, label: 'huge id' }, { value: rng.pick(HOSTILE_BODY_IDS), invalid: false, label: 'hostile id (unknown: ignored)' });
      break;
    case 'snapshot':
      specific.push(
        { value: '', invalid: true, label: 'empty path' },
        { value: w.tmp, invalid: true, label: 'a directory' },
        { value: '/dev/zero', invalid: true, label: 'a device that never ends' },
        { value: `${w.tmp}/no-such-${rng.int(0, 1e6)}.sh`, invalid: true, label: 'missing file' },
        { value: 'relative/snap.sh', invalid: true, label: 'relative path' },
        { value: `${w.tmp}/a\0b`, invalid: true, label: 'NUL in path' },
        { value: '/'.repeat(4097), invalid: true, label: 'path over 4096' },
      );
      break;
    case 'remoteName':
      specific.push(
        { value: '', invalid: true, label: 'empty name' },
        { value: 'Upper Case', invalid: true, label: 'uppercase and space' },
        { value: 'local', invalid: true, label: 'reserved name' },
        { value: 'n'.repeat(33), invalid: true, label: 'name over 32' },
        { value: 'a/b', invalid: true, label: 'slash in name' },
        { value: '../x', invalid: true, label: 'traversal name' },
      );
      break;
    case 'remoteUrl':
      specific.push(
        { value: 'not a url', invalid: true, label: 'not a URL' },
        { value: 'ftp://127.0.0.1/', invalid: true, label: 'ftp scheme' },
        { value: 'javascript:alert(1)', invalid: true, label: 'javascript: URL' },
        { value: 'http://user:pw@127.0.0.1:1', invalid: true, label: 'credentials in the URL' },
        { value: 'http://127.0.0.1:1/?api_key=x', invalid: true, label: 'query in the URL' },
        { value: `http://192.0.2.${rng.int(1, 254)}:8791`, invalid: 'unknown', label: 'plain http off loopback (insecure decides)' },
        { value: `https://${'h'.repeat(2100)}.example`, invalid: true, label: 'URL over 2048' },
      );
      break;
    case 'remoteToken':
      specific.push({ value: '', invalid: true, label: 'empty token' }, { value: 'has space', invalid: true, label: 'space in token' }, { value: 'a\u0000b', invalid: true, label: 'NUL in token' }, { value: 't'.repeat(4097), invalid: true, label: 'token over 4096' });
      break;
    case 'pem':
      specific.push(
        { value: 'not pem', invalid: true, label: 'not PEM' },
        { value: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----', invalid: true, label: 'PEM that does not parse' },
        { value: 'c'.repeat(70 * 1024), invalid: true, label: 'ca over 64 KiB' },
      );
      break;
    case 'policyDefault':
      specific.push({ value: rng.pick(['deny', '', 'ASK', 'Allow', 'always']), invalid: true, label: 'not allow or ask' });
      break;
    case 'rules': {
      const ok = { pattern: INERT_PATTERNS[0], action: 'ask' };
      specific.push(
        { value: [ok, { pattern: 'foo(', action: 'ask' }], invalid: true, label: 'invalid regular expression' },
        { value: [{ pattern: '[z-a]', action: 'deny' }], invalid: true, label: 'invalid range' },
        { value: [{ pattern: 'x', action: 'maybe' }], invalid: true, label: 'unknown action' },
        { value: [{ pattern: '', action: 'ask' }], invalid: true, label: 'empty pattern' },
        { value: [{ pattern: 5, action: 'ask' }], invalid: true, label: 'pattern not a string' },
        { value: [{ action: 'ask' }], invalid: true, label: 'pattern missing' },
        { value: [{ pattern: 'y'.repeat(2001), action: 'ask' }], invalid: true, label: 'pattern over 2000' },
        { value: [{ pattern: huge(rng, lim).replace(/\0/g, 'z'), action: 'ask' }], invalid: true, label: 'huge pattern' },
        { value: [ok, null], invalid: true, label: 'null rule' },
        { value: [ok, 'rm'], invalid: true, label: 'string rule' },
        { value: [{ ...ok, agent: rng.pick(['', 'has space', '../x', 'a'.repeat(65), 7]) }], invalid: true, label: 'bad agent name' },
        { value: Array.from({ length: 501 }, () => ok), invalid: true, label: '501 rules' },
        { value: rng.pick(['rm', 5, true]), invalid: true, label: 'rules not a list' },
      );
      break;
    }
    case 'note':
      specific.push({ value: 'n'.repeat(2001), invalid: true, label: 'note over 2000' }, { value: huge(rng, lim), invalid: true, label: 'huge note' });
      break;
  }
  return rng.chance(0.55) && specific.length ? rng.pick(specific) : rng.pick(generic);
}

// ---------------------------------------------------------------- principals and targets

const WHO_WEIGHTS: [number, Who][] = [
  [56, 'mallory'],
  [20, 'admin'],
  [12, 'none'],
  [12, 'bad'],
];

function credential(who: Who, rng: Rng, w: World, route: { dialect: Dialect }): { headers: Record<string, string>; query: string; credential: 'valid' | 'missing' | 'invalid' } {
  switch (who) {
    case 'mallory': {
      const carrier = rng.weighted<string>([
        [6, 'bearer'],
        [3, 'x-api-key'],
        [2, 'execd'],
        [1, 'query'],
      ]);
      if (carrier === 'bearer') return { headers: { Authorization: `${rng.pick(['Bearer', 'bearer', 'BEARER'])} ${w.tokens.mallory}` }, query: '', credential: 'valid' };
      if (carrier === 'x-api-key') return { headers: { 'x-api-key': w.tokens.mallory }, query: '', credential: 'valid' };
      // X-EXECD-ACCESS-TOKEN counts on the execd door only; ?api_key= on WebSocket upgrades only.
      if (carrier === 'execd') return { headers: { 'X-EXECD-ACCESS-TOKEN': w.tokens.mallory }, query: '', credential: route.dialect === 'execd' ? 'valid' : 'missing' };
      return { headers: {}, query: `api_key=${encodeURIComponent(w.tokens.mallory)}`, credential: 'missing' };
    }
    case 'admin':
      return rng.chance(0.7) ? { headers: { Authorization: `Bearer ${w.tokens.admin}` }, query: '', credential: 'valid' } : { headers: { 'x-api-key': w.tokens.admin }, query: '', credential: 'valid' };
    case 'none':
      return rng.weighted<{ headers: Record<string, string>; query: string; credential: 'missing' }>([
        [4, { headers: {}, query: '', credential: 'missing' }],
        [1, { headers: { Cookie: `ptydeck_viewer=${rng.ascii(20).replace(/[;\s]/g, 'x')}` }, query: '', credential: 'missing' }],
        [1, { headers: { Authorization: `Basic ${Buffer.from('admin:admin').toString('base64')}` }, query: '', credential: 'missing' }],
        [1, { headers: { Authorization: 'Bearer' }, query: '', credential: 'missing' }],
        [1, { headers: { 'x-api-key': '' }, query: '', credential: 'missing' }],
      ]);
    case 'bad':
      return rng.weighted<{ headers: Record<string, string>; query: string; credential: 'invalid' }>([
        [3, { headers: { Authorization: `Bearer pdk_${rng.ascii(32).replace(/\s/g, 'x')}` }, query: '', credential: 'invalid' }],
        [2, { headers: { 'x-api-key': `${w.tokens.mallory}x` }, query: '', credential: 'invalid' }],
        [1, { headers: { Authorization: `Bearer ${'t'.repeat(600)}` }, query: '', credential: 'invalid' }],
        [1, { headers: { Authorization: `Bearer ${w.tokens.admin.slice(0, -1)}` }, query: '', credential: 'invalid' }],
        // The person's viewer cookie as another port receives it (no key), and the old fixed cookie.
        [1, { headers: { Cookie: w.viewer.cookie }, query: '', credential: 'invalid' }],
        [1, { headers: { Cookie: rng.pick(w.viewer.fixedCookies), 'X-Ptydeck-Viewer-Key': w.viewer.key }, query: '', credential: 'invalid' }],
        [1, { headers: { 'x-api-key': rng.ascii(40).replace(/\s/g, 'x') }, query: '', credential: 'invalid' }],
      ]);
  }
}

/** Picks the session a request targets. Admin never touches live sessions; writes only reach sinks. */
function pickTarget(route: Route, who: Who, rng: Rng, w: World): { id: string; segment?: string; foreign: boolean } {
  const random = (): { id: string; foreign: boolean } => ({ id: rng.pick([`nope-${rng.int(0, 1e6)}`, crypto.randomUUID(), 'h-1']), foreign: false });
  const hostileSegment = (): { id: string; segment: string; foreign: boolean } => {
    const segment = w.liveVariants.length && rng.chance(0.3) ? rng.pick(w.liveVariants) : rng.pick(HOSTILE_SEGMENTS);
    return { id: segment, segment, foreign: false };
  };
  const hostileBody = (): { id: string; foreign: boolean } => ({ id: rng.pick(HOSTILE_BODY_IDS), foreign: false });
  const hostile = (): { id: string; segment?: string; foreign: boolean } => (route.target === 'body' ? hostileBody() : hostileSegment());
  const own = who === 'admin' ? w.admin : w.mallory;
  // A route that creates the session it names (bash exec) could claim a doomed session's id once a
  // destroy case has closed it, legitimately: its foreign targets are sessions no case ever closes.
  const claims = route.fields?.some((f) => f.spec.t === 'bashTarget') === true;
  const others = [...w.live, ...w.admin.sinks, ...w.admin.interactive, ...(claims ? [] : w.admin.doomed), ...w.admin.bash];
  const fromPool = (ids: string[]): { id: string; foreign: boolean } | null => (ids.length ? { id: rng.pick(ids), foreign: false } : null);
  const foreign = (): { id: string; segment?: string; foreign: boolean } => {
    const id = rng.pick(rng.chance(0.7) ? w.live : others);
    // The exact id with its first character percent-encoded: the same session once decoded.
    if (route.target === 'param' && rng.chance(0.2)) return { id, segment: `%${id.charCodeAt(0).toString(16).toUpperCase()}${encodeURIComponent(id.slice(1))}`, foreign: true };
    return { id, foreign: true };
  };

  if (who === 'none' || who === 'bad') {
    return rng.weighted<() => { id: string; segment?: string; foreign: boolean }>([
      [3, () => ({ id: rng.pick(w.live), foreign: true })],
      [2, () => fromPool(w.admin.sinks) ?? random()],
      [2, random],
      [2, hostile],
    ])();
  }
  const mine: string[] =
    route.pool === 'bash'
      ? own.bash
      : route.role === 'write'
        ? own.sinks
        : route.role === 'destroy'
          ? own.doomed
          : route.role === 'run'
            ? [...own.interactive, ...own.sinks]
            : [...own.sinks, ...own.interactive, ...own.doomed];
  if (who === 'admin') {
    return rng.weighted<() => { id: string; segment?: string; foreign: boolean }>([
      [6, () => fromPool(mine) ?? random()],
      [2, random],
      [2, hostile],
    ])();
  }
  return rng.weighted<() => { id: string; segment?: string; foreign: boolean }>([
    [5, () => fromPool(mine) ?? random()],
    [3, foreign],
    [1, random],
    [2, hostile],
  ])();
}

// ---------------------------------------------------------------- bodies

interface BuiltBody {
  body?: Buffer;
  contentType?: string;
  invalid: string[];
  uncertain: boolean;
  broken?: 'json' | 'object' | 'size';
  note: string;
}

const INVALID_JSON = [
  '{',
  '{"command": "true"',
  '{"cols": 80,}',
  "{'cols': 80}",
  '{"cols": NaN}',
  '{"cols": Infinity}',
  '{"cols": 0x50}',
  '{"cols": 080}',
  '{"cols": .5}',
  '{cols: 80}',
  '{"a":1}{"b":2}',
  '{"a":"\\x41"}',
  '{"a":"\\u12"}',
  '/* c */ {}',
  '{"a":1} // c',
  'undefined',
  '\u0000',
  '{"a":"tab\there"}',
  '[[[[[[[[',
  '{"a":' + '['.repeat(5000),
  'tru',
  '"unterminated',
];

function buildBody(route: Route, rng: Rng, w: World, target: { id: string } | null, who: Who): BuiltBody {
  const fields = route.fields ?? [];
  const base: Record<string, unknown> = {};
  for (const f of fields) {
    if ((f.spec.t === 'targetId' || f.spec.t === 'bashTarget') && target) base[f.name] = target.id;
    else if (f.required || f.keep || rng.chance(0.35)) {
      const v = validValue(f.spec, rng, w, { target: target?.id });
      if (v !== null || f.nullable) base[f.name] = v;
    }
  }
  // v1 exec without an id creates a session: keep the id most of the time.
  if (route.name === 'v1 exec' && target && rng.chance(0.85)) base.id = target.id;
  // A bash output long poll on a sink (whose command never ends) would wait AIO's default 30 s: correct,
  // but it only slows the attack down.
  if (route.name === 'bash output' && base.wait === true && base.wait_timeout === undefined) base.wait_timeout = 0.1;
  const json = (obj: unknown): Buffer => Buffer.from(JSON.stringify(obj), 'utf8');
  const ct = (): string =>
    rng.weighted<string>([
      [12, 'application/json'],
      [1, 'text/plain'],
      [1, 'application/x-www-form-urlencoded'],
      [1, 'multipart/form-data; boundary=x'],
      [1, 'application/json; charset=latin1'],
      [1, 'a/b/c'],
      [1, ';;;'],
      [1, 'application/json, text/html'],
    ]);

  const shape = fields.length
    ? rng.weighted<string>([
        [20, 'valid'],
        [48, 'mutate'],
        [6, 'nonobject'],
        [8, 'badjson'],
        [4, 'badutf8'],
        [3, 'empty'],
        [4, 'toolarge'],
        [3, 'proto'],
        [2, 'dupkeys'],
        [2, 'deep'],
      ])
    : rng.weighted<string>([
        [14, 'none'],
        [2, 'badjson'],
        [1, 'toolarge'],
        [1, 'nonobject'],
        [1, 'badutf8'],
      ]);
  const required = fields.filter((f) => f.required).map((f) => f.name);
  // A kept field must be in every body that reaches the route (see Field.keep): no empty bodies.
  const keeps = fields.some((f) => f.keep);
  // A route without fields never reads its body, so only the parser can refuse it, and only for methods
  // whose body Fastify parses; GET and DELETE bodies are left to the route (uncertain).
  const parsed = route.method === 'POST' || route.method === 'PATCH' || route.method === 'PUT';
  const uncertainIfBodyless = !parsed;
  const objectUncertain = !parsed || fields.length === 0;

  switch (shape) {
    case 'none':
      return { invalid: [], uncertain: false, note: 'no body' };
    case 'valid': {
      const obj: Record<string, unknown> = { ...base };
      if (rng.chance(0.3)) obj[`zz_extra_${rng.int(0, 9)}`] = rng.pick([1, 'x', null, { deep: [1, 2, { x: 'y' }] }, rng.unicode(50)]);
      return { body: json(obj), contentType: ct(), invalid: [], uncertain: false, note: 'valid' };
    }
    case 'mutate': {
      const obj: Record<string, unknown> = { ...base };
      const invalid: string[] = [];
      let uncertain = false;
      const labels: string[] = [];
      const n = rng.weighted<number>([
        [6, 1],
        [2, 2],
        [1, 3],
      ]);
      for (let i = 0; i < n; i++) {
        const f = rng.pick(fields);
        const m = mutateValue(f, rng, w, who);
        if (m.value === MISSING) delete obj[f.name];
        else obj[f.name] = m.value;
        labels.push(`${f.name}: ${m.label}`);
        // A later mutation of the same field replaces the earlier one.
        const at = invalid.indexOf(f.name);
        if (at >= 0) invalid.splice(at, 1);
        if (m.invalid === true) invalid.push(f.name);
        else if (m.invalid === 'unknown') uncertain = true;
      }
      // A field left missing that is required makes the body invalid too.
      for (const r of required) if (!(r in obj) && !invalid.includes(r)) invalid.push(r);
      let body = json(obj);
      if (body.length > w.bodyLimit) {
        // A huge mutation plus a huge valid value: the body limit answers first.
        return { body, contentType: ct(), invalid, uncertain, broken: 'size', note: `mutated (${labels.join('; ')}), over the body limit` };
      }
      return { body, contentType: ct(), invalid, uncertain, note: `mutated (${labels.join('; ')})` };
    }
    case 'nonobject': {
      const v = rng.pick<unknown>([[], [base], 42, -1, 'a string', true, false, 1e308]);
      return { body: json(v), contentType: ct(), invalid: [], uncertain: objectUncertain, broken: objectUncertain ? undefined : 'object', note: `non-object body ${JSON.stringify(v).slice(0, 40)}` };
    }
    case 'badjson': {
      const text = rng.pick(INVALID_JSON);
      return { body: Buffer.from(text, 'utf8'), contentType: ct(), invalid: [], uncertain: uncertainIfBodyless, broken: uncertainIfBodyless ? undefined : 'json', note: 'invalid JSON' };
    }
    case 'badutf8': {
      const bad = rng.pick([Buffer.from([0xff]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xe2, 0x82]), Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]), rng.bytes(8)]);
      if (rng.chance(0.5)) {
        // Inside a string of an unknown field: decodes to U+FFFD, the body stays valid JSON.
        const obj = JSON.stringify({ ...base, zz_bytes: '@@' });
        const [a, b] = obj.split('@@');
        return { body: Buffer.concat([Buffer.from(a), bad, Buffer.from(b)]), contentType: ct(), invalid: required.filter((r) => !(r in base)), uncertain: true, note: 'invalid UTF-8 inside a string' };
      }
      return { body: Buffer.concat([Buffer.from('{"a":1,'), bad, Buffer.from('}')]), contentType: ct(), invalid: [], uncertain: uncertainIfBodyless, broken: uncertainIfBodyless ? undefined : 'json', note: 'invalid UTF-8 outside strings' };
    }
    case 'empty': {
      if (keeps) return { body: json(base), contentType: 'application/json', invalid: [], uncertain: false, note: 'valid (an empty body would act on every agent)' };
      const body = rng.pick([undefined, Buffer.from(''), Buffer.from('   \r\n\t'), Buffer.from('null')]);
      return { body, contentType: body ? ct() : undefined, invalid: required, uncertain: false, note: `empty body (${JSON.stringify(body?.toString())})` };
    }
    case 'toolarge': {
      const n = w.bodyLimit + rng.pick([1, 100, rng.int(1000, 2 * w.bodyLimit)]);
      const body = Buffer.from(JSON.stringify({ ...base, zz_pad: 'p'.repeat(n) }));
      return { body, contentType: ct(), invalid: [], uncertain: uncertainIfBodyless, broken: uncertainIfBodyless ? undefined : 'size', note: `body of ${body.length} bytes` };
    }
    case 'proto': {
      const text = JSON.stringify(base).replace(/^\{/, `{"__proto__":{"polluted":"yes","isAdmin":true},"constructor":{"prototype":{"polluted":"yes"}},`).replace(/,\}$/, '}');
      return { body: Buffer.from(text), contentType: ct(), invalid: [], uncertain: true, note: 'prototype pollution keys' };
    }
    case 'dupkeys': {
      const f = rng.pick(fields);
      const bad = ['dim', 'int', 'secs', 'waitSecs', 'offset', 'count'].includes(f.spec.t) ? '"x"' : '12345';
      const text = JSON.stringify(base).replace(/\}$/, `${Object.keys(base).length ? ',' : ''}"${f.name}":${JSON.stringify(validValue(f.spec, rng, w, { target: target?.id }))},"${f.name}":${bad}}`);
      return { body: Buffer.from(text), contentType: ct(), invalid: [f.name], uncertain: false, note: `duplicate key ${f.name}, last one invalid` };
    }
    case 'deep': {
      const depth = rng.int(1000, 20000);
      const text = JSON.stringify(base).replace(/\}$/, `${Object.keys(base).length ? ',' : ''}"zz_deep":${'['.repeat(depth)}${']'.repeat(depth)}}`);
      return { body: Buffer.from(text), contentType: ct(), invalid: required.filter((r) => !(r in base)), uncertain: true, note: `an unknown field nested ${depth} deep` };
    }
  }
  return { invalid: [], uncertain: true, note: 'unreachable' };
}

// ---------------------------------------------------------------- unknown routes and methods

const UNKNOWN_PATHS = [
  '/v3/pty/sessions',
  '/v2/pty/sessions/h-1/bogus',
  '/v2/pty',
  '/v1/shell',
  '/v1/shell/exec/extra',
  '/pty/x/ws/y',
  '/api/sessions/x/view',
  '/api/events',
  '/api/../v1/ping',
  '/v1/../api/whoami',
  '//v1/ping',
  '/v1//ping',
  '/V1/PING',
  '/v1/ping/',
  '/health/',
  '/.env',
  '/.git/config',
  '/assets/../../../etc/passwd',
  '/assets/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
  '/assets/..%2f..%2f..%2fpackage.json',
  '/assets/%00',
  '/favicon.ico',
  '/terminal?session_id=../../etc',
  '/?token=garbage',
  '/etc/passwd',
  '/%00',
  '/v2/pty/sessions/',
  '/api/tokens/',
  '/api/sessions/%2e%2e%2f%2e%2e%2fapi%2ftokens',
  '/pty?x=1',
  '/v2/pty/sessions?__proto__[polluted]=yes',
  '/v1/shell/sessions?constructor[prototype][polluted]=yes',
  '/x'.repeat(300),
];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'SEARCH', 'FOO', 'CONNECTX'];

// ---------------------------------------------------------------- the generator

export function generateHttpCase(index: number, root: Rng, w: World): HttpCase {
  const rng = root.fork('http', index);
  const who = rng.weighted(WHO_WEIGHTS);
  const id = `http#${index}`;
  const foreignKind = rng.weighted<'host' | 'origin' | null>([
    [90, null],
    [5, 'host'],
    [5, 'origin'],
  ]);
  const host = foreignKind === 'host' ? rng.pick(foreignHosts(w.port)) : rng.pick([`127.0.0.1:${w.port}`, `localhost:${w.port}`, `LOCALHOST:${w.port}`, `[::1]:${w.port}`]);
  const extra: Record<string, string> = { Host: host };
  if (foreignKind === 'origin') extra.Origin = rng.pick(foreignOrigins(w.port));
  else if (rng.chance(0.05)) extra.Origin = `http://127.0.0.1:${w.port}`; // our own origin: allowed

  if (rng.chance(0.08)) {
    // An unknown route or a method a route does not have.
    const method = rng.pick(METHODS);
    let path = rng.chance(0.5) ? rng.pick(UNKNOWN_PATHS) : rng.pick(ROUTES).path.replace(':id', 'h-1').replace(':name', 'x').replace(':aid', 'apr_x').replace(':key', 'mabc1234-abcdef');
    // DELETE /v1/shell/sessions closes every session the caller sees: the admin would close the live ones.
    if (path === '/v1/shell/sessions' && method === 'DELETE') path = '/v1/shell/sessions/stats';
    const cred = credential(who, rng, w, { dialect: dialectOf(path) });
    if (cred.query) path += (path.includes('?') ? '&' : '?') + cred.query;
    const body = method === 'GET' || method === 'HEAD' || rng.chance(0.5) ? undefined : Buffer.from(rng.pick(['{}', '{"a":1}', 'garbage', '[]']));
    const headers: Record<string, string> = { ...extra, ...cred.headers, ...(body ? { 'Content-Type': 'application/json' } : {}) };
    return {
      id,
      who,
      route: `unknown ${method}`,
      dialect: dialectOf(path),
      req: { method, path, headers, body },
      expect: { foreign: foreignKind ?? undefined, invalid: [], uncertain: true, credential: cred.credential, publicRoute: isPublicPath(path), foreignSession: false },
    };
  }

  // Admin never manages tokens destructively here (it would revoke the watchers' credentials).
  const candidates = ROUTES.filter((r) => !(who === 'admin' && r.name === 'token revoke'));
  const route = rng.pick(candidates);
  const dialect = dialectOf(route.path);
  const cred = credential(who, rng, w, { dialect });
  const target = route.target ? pickTarget(route, who, rng, w) : null;
  let path = route.path;
  let queryInvalid: string[] = [];
  let queryUncertain = false;
  if (route.path.includes(':id')) path = path.replace(':id', target!.segment ?? encodeURIComponent(target!.id));
  if (route.path.includes(':name')) path = path.replace(':name', rng.pick(['nobody-here', '..%2F..', 'alice%00', '__proto__', 'x'.repeat(70), 'h-none']));
  // No approval waits during the suite, so every id is unknown (404 for the person, 403 for an agent).
  // A hostile segment may be refused by the router before the body is read: then the body's faults go unnamed.
  let hostileAid = false;
  if (route.path.includes(':aid')) {
    hostileAid = rng.chance(0.4);
    path = path.replace(':aid', hostileAid ? rng.pick(HOSTILE_SEGMENTS) : rng.pick(['apr_0123456789abcdef01', `apr_${rng.ascii(18).replace(/[^A-Za-z0-9]/g, 'x')}`]));
  }
  if (route.path.includes(':key')) {
    const key = rng.pick(RECORDING_KEYS);
    path = path.replace(':key', key);
    // A malformed key (bad percent-encoding, over-long) is refused before the query is read.
    if (!/^[0-9a-z]{6,12}-[0-9a-f]{6}$/.test(key)) queryUncertain = true;
  }
  if (route.query) {
    const q = route.query(rng);
    path += q.q;
    queryInvalid = q.invalid;
    queryUncertain ||= q.uncertain;
  }
  let targetUsed = true;
  if (route.name === 'v1 terminal-url') {
    // Without a session_id it creates a session (the caller's own); keep that rare.
    if (rng.chance(0.9)) path += `?session_id=${target!.segment ?? encodeURIComponent(target!.id)}`;
    else {
      queryUncertain = true;
      targetUsed = false;
    }
  }
  if (cred.query) path += (path.includes('?') ? '&' : '?') + cred.query;

  const built = buildBody(route, rng, w, route.target === 'body' ? target : null, who);
  // A route that creates the session it is given (bash exec) refuses an id no session may have: that
  // field is then as wrong as any mutated one, and the refusal may name either.
  const idField = route.fields?.find((f) => f.spec.t === 'bashTarget');
  if (idField && target && route.target === 'body' && !SESSION_ID.test(target.id) && sentField(built.body, idField.name) === target.id) built.invalid.push(idField.name);
  const headers: Record<string, string> = { ...extra, ...cred.headers };
  if (built.body !== undefined && built.contentType) headers['Content-Type'] = built.contentType;
  // HEAD instead of GET now and then (Fastify answers HEAD for every GET route).
  const method = route.method === 'GET' && rng.chance(0.04) ? 'HEAD' : route.method;
  // A hostile id in the body is no one's session, except an exact live id.
  const foreignSession = who === 'mallory' && targetUsed && target !== null && (target.foreign || w.live.includes(target.id));
  return {
    id,
    who,
    route: route.name,
    dialect,
    req: { method, path, headers, body: built.body },
    expect: {
      foreign: foreignKind ?? undefined,
      invalid: [...built.invalid, ...queryInvalid],
      uncertain: built.uncertain || queryUncertain || Boolean(target?.segment) || hostileAid,
      // With a hostile path segment too, which fault is answered first (a malformed URL is, before any
      // body is read) is the server's to choose; the segment already makes the case uncertain.
      broken: target?.segment || hostileAid ? undefined : built.broken,
      credential: cred.credential,
      publicRoute: route.role === 'public',
      foreignSession,
      personOnly: who === 'mallory' && PERSON_ONLY.includes(route.role),
    },
  };
}
