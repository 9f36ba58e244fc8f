import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { statSync, unwatchFile, watchFile } from 'node:fs';
import { join } from 'node:path';
import { readJson, writeSecretFile } from '../home';
import { agent, person, type Actor } from '../terminal/actor';

/**
 * Who is asking. The admin is the person at the viewer (and whoever holds the admin token); each agent
 * token is a principal of its own name. Sessions belong to the principal that created them.
 */
export type Principal = { kind: 'admin'; name: 'admin' } | { kind: 'agent'; name: string };

export const ADMIN: Principal = { kind: 'admin', name: 'admin' };

/** The person's credential acts as the person on every door; an agent's as that agent. */
export function actorOf(p: Principal, door: string): Actor {
  return p.kind === 'admin' ? person(door) : agent(p.name, door);
}

interface TokenFile {
  admin?: string;
  agents: { name: string; sha256: string; createdAt: string }[];
}

export const AGENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export class TokenError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const digest = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();
const newToken = (prefix: string): string => `${prefix}_${randomBytes(24).toString('base64url')}`;

/**
 * Tokens live in `<home>/tokens.json` (0600): the admin token in clear (local agents read it from the
 * runtime file anyway), agent tokens only as SHA-256 digests. Every comparison is constant-time on
 * digests of equal length. The file is re-read when it changes, so `ptydeck token revoke` from another
 * process takes effect on a running server, and `onRevoked` lets the server close that agent's sockets.
 */
export class TokenStore {
  readonly path: string;
  private admin: string;
  private adminDigest: Buffer;
  /** The generated admin token kept in the file (absent when PTYDECK_TOKEN supplies it and none was ever generated). */
  private persistedAdmin: string | undefined;
  private agents: TokenFile['agents'] = [];
  private mtimeMs = -1;
  private readonly revokedListeners = new Set<(name: string) => void>();
  private watching = false;

  constructor(home: string, envToken: string | null) {
    this.path = join(home, 'tokens.json');
    const file = readJson<TokenFile>(this.path) ?? { agents: [] };
    this.agents = Array.isArray(file.agents) ? file.agents : [];
    this.persistedAdmin = typeof file.admin === 'string' && file.admin.length >= 16 ? file.admin : undefined;
    if (envToken) this.admin = envToken;
    else if (this.persistedAdmin) this.admin = this.persistedAdmin;
    else {
      this.admin = this.persistedAdmin = newToken('pdk_admin');
      this.save();
    }
    this.adminDigest = digest(this.admin);
    this.mtimeMs = this.fileMtime();
  }

  get adminToken(): string {
    return this.admin;
  }

  authenticate(token: string | undefined | null): Principal | null {
    if (!token || token.length > 512) return null;
    this.reloadIfChanged();
    const d = digest(token);
    if (timingSafeEqual(d, this.adminDigest)) return ADMIN;
    let found: string | null = null;
    for (const a of this.agents) {
      const stored = Buffer.from(a.sha256, 'hex');
      // Keep comparing after a match: the time taken must not say which entry matched.
      if (stored.length === d.length && timingSafeEqual(stored, d) && found === null) found = a.name;
    }
    return found === null ? null : { kind: 'agent', name: found };
  }

  create(name: string): { name: string; token: string } {
    if (!AGENT_NAME_PATTERN.test(name)) throw new TokenError('name must be 1-64 characters of letters, digits and _ . -, starting with a letter or digit', 400);
    if (name === 'admin' || name === 'person') throw new TokenError(`name ${JSON.stringify(name)} is reserved`, 400);
    this.reloadIfChanged();
    if (this.agents.some((a) => a.name === name)) throw new TokenError(`a token named ${JSON.stringify(name)} exists already; revoke it first`, 409);
    const token = newToken('pdk');
    this.agents.push({ name, sha256: digest(token).toString('hex'), createdAt: new Date().toISOString() });
    this.save();
    return { name, token };
  }

  list(): { name: string; createdAt: string }[] {
    this.reloadIfChanged();
    return this.agents.map((a) => ({ name: a.name, createdAt: a.createdAt }));
  }

  revoke(name: string): boolean {
    this.reloadIfChanged();
    const before = this.agents.length;
    this.agents = this.agents.filter((a) => a.name !== name);
    if (this.agents.length === before) return false;
    this.save();
    this.emitRevoked(name);
    return true;
  }

  /** Watches the file for changes made by another process (the CLI) and reports revoked names. */
  watch(onRevoked: (name: string) => void): () => void {
    this.revokedListeners.add(onRevoked);
    if (!this.watching) {
      this.watching = true;
      watchFile(this.path, { interval: 500, persistent: false }, () => this.reloadIfChanged());
    }
    return () => {
      this.revokedListeners.delete(onRevoked);
      if (this.revokedListeners.size === 0 && this.watching) {
        this.watching = false;
        unwatchFile(this.path);
      }
    };
  }

  private emitRevoked(name: string): void {
    for (const l of this.revokedListeners) l(name);
  }

  private fileMtime(): number {
    try {
      return statSync(this.path).mtimeMs;
    } catch {
      return -1;
    }
  }

  private reloadIfChanged(): void {
    const m = this.fileMtime();
    if (m === this.mtimeMs) return;
    this.mtimeMs = m;
    const file = readJson<TokenFile>(this.path);
    if (!file) return;
    const before = new Set(this.agents.map((a) => a.name));
    this.agents = Array.isArray(file.agents) ? file.agents : [];
    const after = new Set(this.agents.map((a) => a.name));
    for (const name of before) if (!after.has(name)) this.emitRevoked(name);
  }

  private save(): void {
    // An admin token from the environment is the environment's to keep: it is never written here.
    const file: TokenFile = { admin: this.persistedAdmin, agents: this.agents };
    writeSecretFile(this.path, JSON.stringify(file, null, 2) + '\n');
    this.mtimeMs = this.fileMtime();
  }
}
