/**
 * How a feature keeps a secret it must use again later (a remote's token): sealed into a string that is
 * stored in a 0600 file in PTYDECK_HOME. Headless, sealing is the identity (the file's mode is the
 * protection, as for ptydeck's own tokens.json); in the desktop app src/main/index.ts supplies Electron's
 * safeStorage (the OS keychain), through `safeStorageSecretStore`, since only that file may import
 * electron.
 *
 * Each stored secret records its scheme, so a file written by the CLI (`file`) still opens in the app,
 * and the app can re-seal it with the keychain.
 */
export interface SecretStore {
  readonly scheme: string;
  seal(secret: string): string;
  /** Throws SecretUnavailableError when this store cannot open that scheme. */
  open(sealed: string, scheme: string): string;
}

export class SecretUnavailableError extends Error {}

export const fileSecretStore: SecretStore = {
  scheme: 'file',
  seal: (secret) => secret,
  open: (sealed, scheme) => {
    if (scheme !== 'file') throw new SecretUnavailableError(`the token is sealed with ${scheme} (the desktop app's keychain): open the desktop app, or add the remote again here`);
    return sealed;
  },
};

/** The few methods of Electron's safeStorage this needs (the real module is handed in by index.ts). */
export interface SafeStorageLike {
  isEncryptionAvailable(): boolean;
  encryptString(plain: string): Buffer;
  decryptString(encrypted: Buffer): string;
}

/** The OS keychain through Electron's safeStorage, when it is available; else the 0600 file. */
export function safeStorageSecretStore(safeStorage: SafeStorageLike): SecretStore {
  if (!safeStorage.isEncryptionAvailable()) return fileSecretStore;
  return {
    scheme: 'safeStorage',
    seal: (secret) => safeStorage.encryptString(secret).toString('base64'),
    open: (sealed, scheme) => (scheme === 'safeStorage' ? safeStorage.decryptString(Buffer.from(sealed, 'base64')) : fileSecretStore.open(sealed, scheme)),
  };
}
