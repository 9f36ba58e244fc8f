import { isIP } from 'node:net';

/**
 * A host name or address that stays on this machine: where a token may travel without TLS (the end of
 * an SSH tunnel, a server that only listens locally). `[::1]` may come with its brackets (URL form).
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1';
}
