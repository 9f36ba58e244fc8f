import { STATUS_CODES } from 'node:http';

/**
 * What the hostile suite demands of every answer, independent of the server's code: the dialect's error
 * shape (docs/API.md), a message that says what was wrong, the field named where a field was wrong,
 * and the tallies printed at the end.
 */
export type Dialect = 'aio' | 'execd' | 'native';

/** The documented rule: /v1 and /v2 speak AIO, /pty speaks execd, everything else ptydeck's own. */
export function dialectOf(target: string): Dialect {
  if (target.startsWith('/v1/') || target.startsWith('/v2/') || target === '/v1' || target === '/v2') return 'aio';
  if (target === '/pty' || target.startsWith('/pty/') || target.startsWith('/pty?')) return 'execd';
  return 'native';
}

const GENERIC = new Set(
  [
    ...Object.values(STATUS_CODES).map((s) => String(s)),
    'bad request',
    'error',
    'invalid request',
    'invalid request:',
    'invalid input',
    'internal error',
    'not found',
    'forbidden',
    'unauthorized',
    'request failed',
    'failed',
    'undefined',
    'null',
  ].map((s) => s.toLowerCase()),
);

/** A message that says what was wrong: not empty, not a status phrase, not a stringified object. */
export function specificProblem(message: unknown): string | null {
  if (typeof message !== 'string') return `message is ${message === undefined ? 'missing' : typeof message}, not a string`;
  const m = message.trim();
  if (!m) return 'message is empty';
  if (GENERIC.has(m.toLowerCase().replace(/[.!]$/, ''))) return `message is only a status phrase (${JSON.stringify(m)})`;
  if (m.length < 8) return `message is too short to say what was wrong (${JSON.stringify(m)})`;
  if (/\[object Object\]/.test(m)) return `message contains [object Object] (${JSON.stringify(m)})`;
  return null;
}

/** Pulls the message (and code) out of an error body by dialect, or says why it cannot. */
export function errorMessage(dialect: Dialect, body: unknown): { message: string; code?: string } | { problem: string } {
  const b = body as Record<string, any> | null | undefined;
  if (!b || typeof b !== 'object') return { problem: `body is not a JSON object (${JSON.stringify(body)?.slice(0, 120)})` };
  switch (dialect) {
    case 'aio':
      if (b.success !== false || typeof b.message !== 'string' || b.data !== null) return { problem: `not AIO's {success:false, message, data:null} envelope: ${JSON.stringify(b).slice(0, 200)}` };
      return { message: b.message };
    case 'execd':
      if (typeof b.code !== 'string' || typeof b.message !== 'string') return { problem: `not execd's {code, message}: ${JSON.stringify(b).slice(0, 200)}` };
      if (!b.code) return { problem: 'execd error with an empty code' };
      return { message: b.message, code: b.code };
    case 'native':
      if (!b.error || typeof b.error !== 'object' || typeof b.error.message !== 'string' || typeof b.error.code !== 'string')
        return { problem: `not ptydeck's {error:{code, message}}: ${JSON.stringify(b).slice(0, 200)}` };
      return { message: b.error.message, code: b.error.code };
  }
}

/** The message names the field: `body.cols`, `cols`, or `cols:` as a word of its own. */
export function namesField(message: string, field: string): boolean {
  const f = field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^A-Za-z0-9_])(body\\.)?${f}([^A-Za-z0-9_]|$)`).test(message);
}

/** 400s that are about the session's state or a limit, not about a field of the request. */
export const STATE_MESSAGE = /running command|not active|interactive shell|limit of \d+ sessions|quota of \d+ sessions|no room for another|is not available; choose another id|needs a WebSocket upgrade|shell (exited|did not)|Too many|has taken control|watch mode|not taking input/i;

export function kindOf(status: number, message = ''): string {
  switch (status) {
    case 400:
      if (/Malformed HTTP|not a valid url/i.test(message)) return 'malformed HTTP';
      if (/not valid JSON/i.test(message)) return 'invalid JSON';
      if (STATE_MESSAGE.test(message)) return 'session state';
      return 'validation';
    case 401:
      return 'auth';
    case 403:
      return /^(Host|Origin) /.test(message) ? 'forbidden host/origin' : 'forbidden (admin only)';
    case 404:
      return 'not found';
    case 405:
      return 'method';
    case 408:
      return 'timeout';
    case 409:
      return 'conflict';
    case 413:
    case 414:
    case 431:
      return 'too large';
    case 415:
      return 'media type';
    case 422:
      return 'validation';
    case 423:
      return 'floor held';
    case 429:
      return 'rate limited';
    default:
      return status >= 500 ? 'SERVER ERROR' : `other ${status}`;
  }
}

export type Channel = 'http' | 'wsUpgrade' | 'wsFrame' | 'raw';

export interface Violation {
  rule: string;
  where: string;
  detail: string;
  /** Set when the violation matches a defect already reported (see KNOWN_DEFECTS). */
  known?: string;
}

/**
 * Defects this suite has found and the server has not fixed yet, each with a reproduction in
 * hostile.test.ts. The sweep files matching violations under them, so that a new kind of violation still
 * fails the run while a known one is visible but not counted twice. Empty: every one found is fixed.
 */
export const KNOWN_DEFECTS: { name: string; matches: (v: Violation) => boolean }[] = [];

export class Tally {
  readonly tried: Record<Channel, number> = { http: 0, wsUpgrade: 0, wsFrame: 0, raw: 0 };
  readonly accepted: Record<Channel, number> = { http: 0, wsUpgrade: 0, wsFrame: 0, raw: 0 };
  readonly rejected: Record<Channel, number> = { http: 0, wsUpgrade: 0, wsFrame: 0, raw: 0 };
  readonly byStatus = new Map<string, number>();
  readonly byKind = new Map<string, number>();
  readonly closeCodes = new Map<number, number>();
  readonly violations: Violation[] = [];
  /** Things worth a look that break no rule (an oracle guess the server answered differently). */
  readonly notes: string[] = [];
  sentinels = 0;
  bytesSent = 0;
  /** The slowest answers per lane (diagnostics only: nothing asserts on time). */
  readonly slowest = new Map<string, { ms: number; where: string }[]>();

  latency(lane: string, ms: number, where: string): void {
    const list = this.slowest.get(lane) ?? [];
    list.push({ ms, where });
    list.sort((a, b) => b.ms - a.ms);
    this.slowest.set(lane, list.slice(0, 3));
  }

  /** How many times each rule was actually checked (so a green run is not a vacuous one). */
  readonly checks = new Map<string, number>();

  check(rule: string): void {
    this.checks.set(rule, (this.checks.get(rule) ?? 0) + 1);
  }

  private bump(map: Map<string, number>, key: string): void {
    map.set(key, (map.get(key) ?? 0) + 1);
  }

  try(channel: Channel): void {
    this.tried[channel]++;
  }

  accept(channel: Channel, status: string): void {
    this.accepted[channel]++;
    this.bump(this.byStatus, `${channel} ${status}`);
  }

  reject(channel: Channel, status: string, kind: string): void {
    this.rejected[channel]++;
    this.bump(this.byStatus, `${channel} ${status}`);
    this.bump(this.byKind, kind);
  }

  /** Other outcomes (a stalled socket, a transport reset) counted by status only. */
  other(channel: Channel, status: string): void {
    this.bump(this.byStatus, `${channel} ${status}`);
  }

  close(code: number): void {
    this.closeCodes.set(code, (this.closeCodes.get(code) ?? 0) + 1);
  }

  violate(rule: string, where: string, detail: string): void {
    const v: Violation = { rule, where, detail };
    v.known = KNOWN_DEFECTS.find((d) => d.matches(v))?.name;
    this.violations.push(v);
  }

  note(text: string): void {
    if (this.notes.length < 200) this.notes.push(text);
  }

  unknownViolations(rules?: string[]): Violation[] {
    return this.violations.filter((v) => !v.known && (!rules || rules.includes(v.rule)));
  }

  table(seed: number, extra: Record<string, string | number> = {}): string {
    const pad = (s: string, n: number) => s + ' '.repeat(Math.max(0, n - s.length));
    const lines: string[] = [];
    const total = Object.values(this.tried).reduce((a, b) => a + b, 0);
    lines.push(`hostile suite, seed=${seed} (0x${seed.toString(16)}): ${total} hostile requests, frames and sockets`);
    lines.push('');
    lines.push(`${pad('channel', 28)}${pad('tried', 8)}${pad('accepted', 10)}rejected`);
    const names: Record<Channel, string> = { http: 'HTTP requests', wsUpgrade: 'WebSocket upgrades', wsFrame: 'WebSocket frames', raw: 'raw sockets' };
    for (const c of Object.keys(this.tried) as Channel[]) {
      lines.push(`${pad(names[c], 28)}${pad(String(this.tried[c]), 8)}${pad(String(this.accepted[c]), 10)}${this.rejected[c]}`);
    }
    lines.push(`(plus ${this.sentinels} sentinel frames, not counted, that mark where each hostile frame's answer ends)`);
    lines.push('');
    lines.push('by status / outcome:');
    for (const [k, n] of [...this.byStatus.entries()].sort()) lines.push(`  ${pad(k, 40)}${n}`);
    lines.push('');
    lines.push('rejections by kind:');
    for (const [k, n] of [...this.byKind.entries()].sort((a, b) => b[1] - a[1])) lines.push(`  ${pad(k, 40)}${n}`);
    lines.push('');
    lines.push('rules checked:');
    for (const [k, n] of [...this.checks.entries()].sort((a, b) => b[1] - a[1])) lines.push(`  ${pad(k, 40)}${n}`);
    lines.push('');
    lines.push(`client sockets closed, by code: ${[...this.closeCodes.entries()].sort((a, b) => a[0] - b[0]).map(([c, n]) => `${c}×${n}`).join(', ') || 'none'}`);
    for (const [k, v] of Object.entries(extra)) lines.push(`${k}: ${v}`);
    lines.push('slowest answers (diagnostics, not asserted):');
    for (const [lane, list] of this.slowest) for (const { ms, where } of list) lines.push(`  ${pad(lane, 10)}${pad(`${ms} ms`, 10)}${where.slice(0, 220)}`);
    const known = new Map<string, number>();
    for (const v of this.violations) if (v.known) known.set(v.known, (known.get(v.known) ?? 0) + 1);
    const unknown = this.violations.filter((v) => !v.known);
    lines.push('');
    lines.push(`violations: ${unknown.length} new, ${this.violations.length - unknown.length} of known defects`);
    for (const [k, n] of known) lines.push(`  known  ${n}× ${k}`);
    const byRule = new Map<string, Violation[]>();
    for (const v of unknown) byRule.set(v.rule, [...(byRule.get(v.rule) ?? []), v]);
    for (const [rule, vs] of byRule) {
      lines.push(`  NEW    ${vs.length}× ${rule}`);
      for (const v of vs.slice(0, 5)) lines.push(`           ${v.where}: ${v.detail.slice(0, 400)}`);
    }
    if (this.notes.length) {
      lines.push('');
      lines.push(`notes (${this.notes.length}, first 15):`);
      for (const n of this.notes.slice(0, 15)) lines.push(`  ${n.slice(0, 300)}`);
    }
    return lines.join('\n');
  }
}

/** One line of a request for an assertion message, with the tokens replaced by their owners' names. */
export function describeRequest(r: { method: string; path: string; headers: Record<string, string>; body?: Buffer }, secrets: Record<string, string>): string {
  const redact = (s: string): string => {
    let out = s;
    for (const [name, token] of Object.entries(secrets)) if (token) out = out.split(token).join(`<${name}-token>`);
    return out;
  };
  const headers = Object.entries(r.headers)
    .filter(([k, v]) => typeof v === 'string' && !/^content-length$/i.test(k))
    .map(([k, v]) => `${k}: ${redact(v).slice(0, 80)}`)
    .join('; ');
  let body = '';
  if (r.body) {
    const text = r.body.toString('utf8');
    body = ` body(${r.body.length}B)=${JSON.stringify(redact(text.length > 240 ? `${text.slice(0, 200)}…${text.slice(-30)}` : text))}`;
  }
  return `${r.method} ${redact(r.path).slice(0, 300)} [${headers}]${body}`;
}
