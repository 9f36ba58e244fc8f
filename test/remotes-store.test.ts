import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { remoteCommand } from '../src/main/remotes/cli';
import { RemoteStore } from '../src/main/remotes/store';
import { fileSecretStore, safeStorageSecretStore, type SafeStorageLike } from '../src/main/secret-store';

/**
 * Where remotes and their tokens are kept: `<home>/remotes.json`, 0600, the token sealed by the secret
 * store (the file's mode headless; the OS keychain, through Electron's safeStorage, in the app), never
 * printed again. The CLI (`ptydeck remote add|list|remove`) edits the same file.
 */
let home: string;
let savedHome: string | undefined;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'ptydeck-remote-store-'));
  savedHome = process.env.PTYDECK_HOME;
  process.env.PTYDECK_HOME = home;
});
afterEach(() => {
  if (savedHome === undefined) delete process.env.PTYDECK_HOME;
  else process.env.PTYDECK_HOME = savedHome;
  rmSync(home, { recursive: true, force: true });
  vi.restoreAllMocks();
});

/** A stand-in for Electron's safeStorage: reversible, and visibly not the token. */
const fakeKeychain: SafeStorageLike = {
  isEncryptionAvailable: () => true,
  encryptString: (s) => Buffer.from(`sealed:${[...s].reverse().join('')}`),
  decryptString: (b) => [...b.toString().replace(/^sealed:/, '')].reverse().join(''),
};

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((m: unknown) => void out.push(String(m)));
  vi.spyOn(console, 'error').mockImplementation((m: unknown) => void err.push(String(m)));
  const code = await remoteCommand(args, 'usage');
  vi.restoreAllMocks();
  return { code, out: out.join('\n'), err: err.join('\n') };
}

test('ptydeck remote add | list | remove: the token is stored 0600 and never printed again', async () => {
  const token = 'pdk_admin_the-secret-token-1234';
  const added = await cli('add', 'box', 'http://127.0.0.1:9', '--token', token);
  expect(added.code).toBe(0);
  expect(added.out).toBe('added box: ptydeck at http://127.0.0.1:9 (token …1234)');
  const file = join(home, 'remotes.json');
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(statSync(home).mode & 0o777).toBe(0o700);

  const tokenFile = join(home, 'aio-key');
  writeFileSync(tokenFile, 'aio-key-5678\n');
  expect((await cli('add', 'sandbox', 'https://sandbox.example/aio', '--token-file', tokenFile, '--kind', 'aio')).out).toContain('aio at https://sandbox.example/aio');

  const listed = await cli('list');
  expect(listed.code).toBe(0);
  expect(listed.out).toContain('box\tptydeck\thttp://127.0.0.1:9\ttoken …1234');
  expect(listed.out).toContain('sandbox\taio\thttps://sandbox.example/aio\ttoken …5678');
  expect(listed.out).not.toContain(token);

  expect((await cli('remove', 'box')).out).toBe('removed box');
  expect((await cli('remove', 'box')).code).toBe(1);
  expect(readFileSync(file, 'utf8')).not.toContain(token);
});

test('the CLI refuses what the API refuses, saying why', async () => {
  const far = await cli('add', 'far', 'http://192.0.2.7:8791', '--token', 't');
  expect(far.code).toBe(1);
  expect(far.err).toMatch(/in clear.*--insecure/);
  expect((await cli('add', 'far', 'http://192.0.2.7:8791', '--token', 't', '--insecure')).out).toMatch(/insecure: the token crosses the network in clear/);
  expect((await cli('add', 'nokey', 'http://127.0.0.1:9')).err).toMatch(/needs --token/);
  expect((await cli('add', 'x', 'http://127.0.0.1:9', '--token', 't', '--kind', 'ssh')).err).toMatch(/--kind must be ptydeck or aio/);
  expect((await cli('add', 'Bad', 'http://127.0.0.1:9', '--token', 't')).err).toMatch(/lowercase/);
  expect((await cli('frobnicate')).code).toBe(2);
});

test('in the app, tokens are sealed by the keychain, and ones the CLI stored are re-sealed', () => {
  const headless = new RemoteStore(home, fileSecretStore);
  headless.add({ name: 'from-cli', url: 'http://127.0.0.1:9', token: 'plain-token-aaaa' });
  expect(readFileSync(join(home, 'remotes.json'), 'utf8')).toContain('plain-token-aaaa');

  const app = new RemoteStore(home, safeStorageSecretStore(fakeKeychain));
  app.add({ name: 'from-app', url: 'http://127.0.0.1:9', token: 'app-token-bbbb' });
  const text = readFileSync(join(home, 'remotes.json'), 'utf8');
  expect(text).not.toContain('plain-token-aaaa');
  expect(text).not.toContain('app-token-bbbb');
  expect(app.token(app.get('from-cli')!)).toBe('plain-token-aaaa');
  expect(app.token(app.get('from-app')!)).toBe('app-token-bbbb');

  // Headless again: a keychain-sealed token cannot be opened there, and the error says what to do.
  const later = new RemoteStore(home, fileSecretStore);
  expect(() => later.token(later.get('from-app')!)).toThrow(/keychain.*desktop app/);
});

test('without a keychain (safeStorage unavailable) the app falls back to the 0600 file', () => {
  const store = safeStorageSecretStore({ ...fakeKeychain, isEncryptionAvailable: () => false });
  expect(store.scheme).toBe('file');
});

test('a hand-edited file with broken entries keeps the whole ones', () => {
  writeFileSync(join(home, 'remotes.json'), JSON.stringify({ remotes: [{ name: 'half' }, { name: 'ok', url: 'http://127.0.0.1:9', kind: 'aio', insecure: false, createdAt: 'x', tokenHint: '…abcd', secret: { scheme: 'file', sealed: 'abcd' } }] }));
  expect(new RemoteStore(home, fileSecretStore).list().map((e) => e.name)).toEqual(['ok']);
});
