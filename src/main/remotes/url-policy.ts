import { X509Certificate } from 'node:crypto';
import { isLoopbackHost } from '../loopback';

/**
 * What a remote may be: a name the deck shows and puts in ids (`name/id`), a URL that never carries a
 * credential, and no token in clear across a network: plain http:// is accepted only to a loopback
 * address (an SSH tunnel ends there) unless the person says --insecure.
 */
export const REMOTE_NAME_PATTERN = /^[a-z0-9][a-z0-9_.-]{0,31}$/;

/** Names that would read as the deck itself. */
const RESERVED_NAMES = new Set(['local', 'localhost', 'admin']);

export class RemoteInputError extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export function checkRemoteName(name: string): string {
  if (!REMOTE_NAME_PATTERN.test(name)) throw new RemoteInputError(`name ${JSON.stringify(name)}: 1-32 lowercase letters, digits and _ . -, starting with a letter or digit`);
  if (RESERVED_NAMES.has(name)) throw new RemoteInputError(`name ${JSON.stringify(name)} is reserved`);
  return name;
}

/** The base URL, normalised (no trailing slash), or a RemoteInputError that says what is wrong. */
export function checkRemoteUrl(raw: string, insecure: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RemoteInputError(`url ${JSON.stringify(raw)} is not a URL: write it as http://HOST:PORT or https://HOST[:PORT][/path]`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RemoteInputError(`url must start with http:// or https:// (got ${url.protocol}//)`);
  if (url.username || url.password) throw new RemoteInputError('url must not carry a user or password: pass the token with --token');
  if (url.search || url.hash) throw new RemoteInputError('url must not have a query or fragment: give the server\'s base URL');
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !insecure) {
    throw new RemoteInputError(
      `plain http:// to ${url.hostname} would send the token in clear across the network. Use https:// (the remote runs \`ptydeck serve --tls-cert --tls-key\`, or sits behind a TLS proxy), ` +
        `or an SSH tunnel (\`ssh -N -L 8792:127.0.0.1:8791 ${url.hostname}\`, then add http://127.0.0.1:8792), or pass --insecure if you trust every network in between`,
    );
  }
  return url.origin + url.pathname.replace(/\/+$/, '');
}

/** A token goes in an HTTP header: printable ASCII, no spaces. */
export function checkRemoteToken(token: string): string {
  if (!/^[\x21-\x7e]{1,4096}$/.test(token)) throw new RemoteInputError('token must be 1-4096 printable characters without spaces');
  return token;
}

/** A CA certificate (PEM) to trust for this remote's TLS, for a self-signed certificate. */
export function checkCa(pem: string): string {
  const problem = `ca must be PEM certificate text (-----BEGIN CERTIFICATE-----), at most ${MaxCaBytes / 1024} KiB`;
  if (pem.length > MaxCaBytes || !/-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----/.test(pem)) throw new RemoteInputError(problem);
  try {
    new X509Certificate(pem);
  } catch (err) {
    throw new RemoteInputError(`${problem}: it does not parse (${(err as Error).message})`);
  }
  return pem;
}

/** A CA bundle larger than this is not a certificate someone meant to pin. */
const MaxCaBytes = 64 * 1024;

export const tokenHint = (token: string): string => `…${token.slice(-4)}`;
