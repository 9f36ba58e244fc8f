import { statSync, unwatchFile, watchFile } from 'node:fs';
import { join } from 'node:path';
import type { RemoteKind } from '../../shared/types';
import { readJson, writeSecretFile } from '../home';
import type { SecretStore } from '../secret-store';
import { checkCa, checkRemoteName, checkRemoteToken, checkRemoteUrl, RemoteInputError, tokenHint } from './url-policy';

/**
 * The remotes the person added, in `<home>/remotes.json` (0600, written atomically, like tokens.json).
 * Each token is sealed by the SecretStore (the keychain in the desktop app, the file's mode headless) and
 * never leaves this module except to the client that sends it to its own remote. The file is watched, so
 * `ptydeck remote add` from another process reaches a running server.
 */
export interface RemoteEntry {
  name: string;
  url: string;
  kind: RemoteKind;
  insecure: boolean;
  /** PEM of a CA (or self-signed certificate) to trust for this remote, besides the system's. */
  ca?: string;
  createdAt: string;
  tokenHint: string;
  secret: { scheme: string; sealed: string };
}

export interface NewRemote {
  name: string;
  url: string;
  token: string;
  kind?: RemoteKind;
  insecure?: boolean;
  ca?: string;
}

/** More remotes than this is not one person's deck; each costs sockets and a poller. */
export const MaxRemotes = 32;

interface RemoteFile {
  remotes: RemoteEntry[];
}

export class RemoteStore {
  readonly path: string;
  private entries: RemoteEntry[] = [];
  private mtimeMs = -1;
  private readonly listeners = new Set<() => void>();

  constructor(
    home: string,
    private readonly secrets: SecretStore,
  ) {
    this.path = join(home, 'remotes.json');
    this.load();
    // The app's keychain takes over tokens the CLI stored in the file.
    if (secrets.scheme !== 'file' && this.entries.some((e) => e.secret.scheme === 'file')) {
      this.entries = this.entries.map((e) => (e.secret.scheme === 'file' ? { ...e, secret: { scheme: secrets.scheme, sealed: secrets.seal(e.secret.sealed) } } : e));
      this.save();
    }
  }

  list(): RemoteEntry[] {
    this.reloadIfChanged();
    return [...this.entries];
  }

  get(name: string): RemoteEntry | undefined {
    return this.list().find((e) => e.name === name);
  }

  add(input: NewRemote): RemoteEntry {
    const name = checkRemoteName(input.name);
    const insecure = input.insecure === true;
    const url = checkRemoteUrl(input.url, insecure);
    const token = checkRemoteToken(input.token);
    const kind = input.kind ?? 'ptydeck';
    if (kind !== 'ptydeck' && kind !== 'aio') throw new RemoteInputError(`kind must be ptydeck or aio (got ${JSON.stringify(kind)})`);
    const ca = input.ca === undefined ? undefined : checkCa(input.ca);
    this.reloadIfChanged();
    if (this.entries.some((e) => e.name === name)) throw new RemoteInputError(`a remote named ${JSON.stringify(name)} exists already; remove it first`, 409);
    if (this.entries.length >= MaxRemotes) throw new RemoteInputError(`at most ${MaxRemotes} remotes; remove one first`, 409);
    const entry: RemoteEntry = {
      name,
      url,
      kind,
      insecure,
      ...(ca ? { ca } : {}),
      createdAt: new Date().toISOString(),
      tokenHint: tokenHint(token),
      secret: { scheme: this.secrets.scheme, sealed: this.secrets.seal(token) },
    };
    this.entries.push(entry);
    this.save();
    return entry;
  }

  remove(name: string): boolean {
    this.reloadIfChanged();
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => e.name !== name);
    if (this.entries.length === before) return false;
    this.save();
    return true;
  }

  /** The token in clear, for the remote's own client only. Throws SecretUnavailableError. */
  token(entry: RemoteEntry): string {
    return this.secrets.open(entry.secret.sealed, entry.secret.scheme);
  }

  /** Calls `onChange` whenever the list changes, here or in another process. */
  watch(onChange: () => void): () => void {
    this.listeners.add(onChange);
    if (this.listeners.size === 1) watchFile(this.path, { interval: FileWatchMs, persistent: false }, () => this.reloadIfChanged());
    return () => {
      this.listeners.delete(onChange);
      if (this.listeners.size === 0) unwatchFile(this.path);
    };
  }

  private load(): void {
    const file = readJson<RemoteFile>(this.path);
    this.entries = Array.isArray(file?.remotes) ? file.remotes.filter(isEntry) : [];
    this.mtimeMs = this.fileMtime();
  }

  private reloadIfChanged(): void {
    if (this.fileMtime() === this.mtimeMs) return;
    this.load();
    this.emit();
  }

  private save(): void {
    writeSecretFile(this.path, JSON.stringify({ remotes: this.entries } satisfies RemoteFile, null, 2) + '\n');
    this.mtimeMs = this.fileMtime();
    this.emit();
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }

  private fileMtime(): number {
    try {
      return statSync(this.path).mtimeMs;
    } catch {
      return -1;
    }
  }
}

/** How often another process's edit is noticed (the same interval as tokens.json's watch). */
const FileWatchMs = 500;

/** A hand-edited or older file may hold anything: keep the entries that are whole. */
function isEntry(e: unknown): e is RemoteEntry {
  const r = e as RemoteEntry;
  return (
    !!r &&
    typeof r.name === 'string' &&
    typeof r.url === 'string' &&
    (r.kind === 'ptydeck' || r.kind === 'aio') &&
    typeof r.secret?.sealed === 'string' &&
    typeof r.secret?.scheme === 'string' &&
    typeof r.tokenHint === 'string'
  );
}
