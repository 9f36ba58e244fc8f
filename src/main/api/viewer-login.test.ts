import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { ViewerLoginConstants as C, ViewerLogins } from './viewer-login';

/** The login store on a clock the test moves (no waiting, no timing). */
let home: string | null = null;
afterEach(() => {
  if (home) rmSync(home, { recursive: true, force: true });
  home = null;
});

const clock = () => {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
};

test('a code works once and only within its minute', () => {
  const c = clock();
  const logins = new ViewerLogins(null, c.now);
  const code = logins.issueCode();
  expect(logins.redeemCode(code)).toBe(true);
  expect(logins.redeemCode(code)).toBe(false);
  const late = logins.issueCode();
  c.advance(C.CodeLifetimeMs);
  expect(logins.redeemCode(late)).toBe(false);
  const fresh = logins.issueCode();
  c.advance(C.CodeLifetimeMs - 1);
  expect(logins.redeemCode(fresh)).toBe(true);
});

test('a session needs its key, slides with use, ends when idle and at its maximum age', () => {
  const c = clock();
  const logins = new ViewerLogins(null, c.now);
  const { cookie, key } = logins.open();
  expect(logins.check(cookie, key)).toBe(true);
  expect(logins.check(cookie, null)).toBe(false);
  // Another key of the same length: its first character always differs (a key may begin with 'x').
  expect(logins.check(cookie, (key[0] === 'x' ? 'y' : 'x') + key.slice(1))).toBe(false);
  // Used just before the idle limit each time, it lives on ...
  for (let i = 0; i < 3; i++) {
    c.advance(C.IdleMs - 1);
    expect(logins.check(cookie, key)).toBe(true);
  }
  // ... until idle for the whole limit.
  c.advance(C.IdleMs);
  expect(logins.check(cookie, key)).toBe(false);
  const second = logins.open();
  for (let used = 0; used < C.MaxLifetimeMs - C.IdleMs; used += C.IdleMs - 1) {
    c.advance(C.IdleMs - 1);
    expect(logins.check(second.cookie, second.key)).toBe(true);
  }
  c.advance(C.IdleMs - 1);
  expect(logins.check(second.cookie, second.key)).toBe(false);
});

test('revocation ends one session or all; the file keeps digests only, 0600, and a new store reads it back', () => {
  home = mkdtempSync(join(tmpdir(), 'ptydeck-logins-'));
  const logins = new ViewerLogins(home);
  const a = logins.open();
  const b = logins.open();
  const text = readFileSync(join(home, 'viewer-sessions.json'), 'utf8');
  for (const secret of [a.cookie, a.key, b.cookie, b.key]) expect(text).not.toContain(secret);
  expect(statSync(join(home, 'viewer-sessions.json')).mode & 0o777).toBe(0o600);
  const reloaded = new ViewerLogins(home);
  expect(reloaded.check(a.cookie, a.key)).toBe(true);
  reloaded.revoke(a.cookie);
  expect(reloaded.check(a.cookie, a.key)).toBe(false);
  expect(reloaded.check(b.cookie, b.key)).toBe(true);
  expect(reloaded.revokeAll()).toBe(1);
  expect(new ViewerLogins(home).check(b.cookie, b.key)).toBe(false);
  reloaded.dispose();
  logins.dispose();
});
