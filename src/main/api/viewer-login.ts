import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { readJson, writeSecretFile } from '../home';

/**
 * The person's login to the viewer as a web page.
 *
 *   1. A one-time code: printed at start as a link (`/?login=CODE`) or minted by `ptydeck url`. It works
 *      once, within a minute, and is never the admin token, so a URL in the browser's history opens nothing.
 *   2. The page trades it (POST /api/login) for a viewer session: a random cookie (HttpOnly, SameSite=Strict,
 *      named for this server's port) and a random key the page keeps in its own storage.
 *   3. Every request needs both. Browsers send a 127.0.0.1 cookie to every port of 127.0.0.1, so a
 *      listener an agent starts on another port receives the cookie when the person follows its link;
 *      it never receives the key, which lives in storage scoped to this origin (scheme, host and port).
 *
 * Sessions expire after ViewerLoginConstants.IdleMs without use (sliding) and at MaxLifetimeMs in any
 * case, and can be revoked (POST /api/logout). They are kept, as digests only, in the home directory, so
 * a restarted server still knows the page that was open.
 */
export const ViewerLoginConstants = {
  /** A login link is for opening now: a minute covers a click, not a link found later in a log or history. */
  CodeLifetimeMs: 60_000,
  /** Unused codes kept at once; minting more drops the oldest. */
  MaxPendingCodes: 16,
  /** A viewer session unused this long ends (each use extends it): a workday of an open tab, not a forgotten one. */
  IdleMs: 12 * 60 * 60_000,
  /** Whatever its use, a viewer session ends after a week; the person signs in again with a fresh link. */
  MaxLifetimeMs: 7 * 24 * 60 * 60_000,
  /** Viewer sessions kept at once; signing in again past it ends the least recently used. */
  MaxSessions: 32,
  /** How often last-use times are written back (a sliding expiry need not be exact to the second). */
  PersistEveryMs: 60_000,
} as const;

const FILE = 'viewer-sessions.json';

interface Stored {
  /** SHA-256 of the key, hex. */
  key: string;
  createdAt: number;
  usedAt: number;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
const secret = (): string => randomBytes(32).toString('base64url');

export class ViewerLogins {
  /** By SHA-256 of the cookie value (hex): a stolen file holds nothing that signs anyone in. */
  private readonly sessions = new Map<string, Stored>();
  private readonly codes = new Map<string, number>();
  private persistTimer: NodeJS.Timeout | null = null;
  private readonly path: string | null;

  constructor(
    home: string | null,
    private readonly now: () => number = Date.now,
  ) {
    this.path = home ? join(home, FILE) : null;
    const saved = this.path ? readJson<{ sessions?: Record<string, Stored> }>(this.path) : null;
    for (const [id, s] of Object.entries(saved?.sessions ?? {})) {
      if (typeof s?.key === 'string' && Number.isFinite(s.createdAt) && Number.isFinite(s.usedAt) && this.live(s)) this.sessions.set(id, s);
    }
  }

  /** A new one-time login code. */
  issueCode(): string {
    this.dropExpiredCodes();
    while (this.codes.size >= ViewerLoginConstants.MaxPendingCodes) this.codes.delete(this.codes.keys().next().value as string);
    const code = secret();
    this.codes.set(createHash('sha256').update(code).digest('hex'), this.now() + ViewerLoginConstants.CodeLifetimeMs);
    return code;
  }

  /** True once for a code issued in the last minute; false for any other string, and for the same code again. */
  redeemCode(code: string): boolean {
    this.dropExpiredCodes();
    const id = createHash('sha256').update(code).digest('hex');
    const ok = this.codes.has(id);
    this.codes.delete(id);
    return ok;
  }

  /** Starts a viewer session: the cookie value and the page's key. */
  open(): { cookie: string; key: string } {
    const cookie = secret();
    const key = secret();
    const t = this.now();
    this.sessions.set(digest(cookie).toString('hex'), { key: digest(key).toString('hex'), createdAt: t, usedAt: t });
    while (this.sessions.size > ViewerLoginConstants.MaxSessions) {
      const oldest = [...this.sessions.entries()].sort((a, b) => a[1].usedAt - b[1].usedAt)[0][0];
      this.sessions.delete(oldest);
    }
    this.persist(true);
    return { cookie, key };
  }

  /** True when the cookie names a live session and the key is its key; a success extends the session. */
  check(cookie: string, key: string | null): boolean {
    const id = digest(cookie).toString('hex');
    const s = this.sessions.get(id);
    if (!s) return false;
    if (!this.live(s)) {
      this.sessions.delete(id);
      this.persist(true);
      return false;
    }
    const want = Buffer.from(s.key, 'hex');
    const got = digest(key ?? '');
    if (key === null || want.length !== got.length || !timingSafeEqual(want, got)) return false;
    s.usedAt = this.now();
    this.persist(false);
    return true;
  }

  /** Ends the session this cookie names (if any). */
  revoke(cookie: string): void {
    if (this.sessions.delete(digest(cookie).toString('hex'))) this.persist(true);
  }

  /** Ends every viewer session (signing out everywhere). */
  revokeAll(): number {
    const n = this.sessions.size;
    this.sessions.clear();
    this.persist(true);
    return n;
  }

  dispose(): void {
    if (this.persistTimer) {
      clearTimeout(this.persistTimer);
      this.persistTimer = null;
      this.write();
    }
  }

  private live(s: Stored): boolean {
    const t = this.now();
    return t - s.usedAt < ViewerLoginConstants.IdleMs && t - s.createdAt < ViewerLoginConstants.MaxLifetimeMs;
  }

  private dropExpiredCodes(): void {
    const t = this.now();
    for (const [id, expires] of this.codes) if (expires <= t) this.codes.delete(id);
  }

  /** Writes now (a session began or ended), or soon (only a last-use time moved). */
  private persist(now: boolean): void {
    if (!this.path) return;
    if (now) {
      if (this.persistTimer) clearTimeout(this.persistTimer);
      this.persistTimer = null;
      this.write();
      return;
    }
    if (this.persistTimer) return;
    this.persistTimer = setTimeout(() => {
      this.persistTimer = null;
      this.write();
    }, ViewerLoginConstants.PersistEveryMs);
    this.persistTimer.unref();
  }

  private write(): void {
    if (!this.path) return;
    try {
      writeSecretFile(this.path, JSON.stringify({ sessions: Object.fromEntries(this.sessions) }, null, 2) + '\n');
    } catch (err) {
      // The home may be gone (a test's temporary one); sessions go on in memory.
      console.warn(`ptydeck: could not record viewer sessions in ${this.path}: ${(err as Error).message}`);
    }
  }
}
