import { readFileSync } from 'node:fs';
import { defaultHome } from './home';
import { isLoopbackHost } from './loopback';
import { defaultManagerConfig, type ManagerConfig } from './terminal/manager';
import { parseTimelineSettings, type TimelineSettings } from './timeline/settings';

/**
 * Flags and environment in one place. AIO's own variables are honoured so that a deployment written
 * for AIO Sandbox keeps its settings: AIO_SHELL_BACKEND, AIO_SHELL_MAX_SESSIONS, AIO_SHELL_SESSION_TIMEOUT_SECS.
 */
export interface ServerConfig {
  host: string;
  port: number;
  /**
   * Extra names accepted in Host and Origin besides loopback (a reverse proxy you run yourself):
   * `NAME` (no port, or this server's port; either scheme) or `NAME:PORT`.
   */
  allowedHosts: string[];
  /** Serve HTTPS and WSS with this certificate and key (PEM text), or plain HTTP when null. */
  tls: { cert: string; key: string } | null;
  /** The person accepted listening on a non-loopback address without TLS (--insecure). */
  insecure: boolean;
  home: string;
  /** The admin (person's) token from PTYDECK_TOKEN, else generated once and kept in the home directory. */
  tokenFromEnv: string | null;
  backend: 'auto' | 'host' | 'tmux' | 'native';
  manager: ManagerConfig;
  /** Where the built viewer lives; null serves a notice instead. */
  viewerDir: string | null;
  limits: Limits;
  /**
   * PTYDECK_FLOOR_LEASE_SECS: when the person holds a session's floor and no viewer of theirs has been
   * connected for this long, the floor returns to the agent (a floor held by nobody locks the agent out).
   */
  floorLeaseSecs: number;
  /** PTYDECK_APPROVAL_TIMEOUT_SECS: an agent's command nobody decides on within this is denied. */
  approvalTimeoutSecs: number;
  /** The timeline and recordings (src/main/timeline/settings.ts). */
  timeline: TimelineSettings;
}

/** default: PTYDECK_FLOOR_LEASE_SECS. A minute covers a page reload, a server restart or a brief network drop. */
export const DefaultFloorLeaseSecs = 60;

export interface Limits {
  bodyBytes: number;
  /** Time to receive a request's headers; also how long a new connection may stay silent. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, headers and body. Never the answer's time: an exec may answer minutes later. */
  bodyTimeoutMs: number;
  /** Connections that have not shown a credential, at most; past it the oldest is closed. */
  unauthenticatedConnections: number;
  inputBytes: number;
  wsFrameBytes: number;
  socketsPerPrincipal: number;
  createsPerMinute: number;
}

export const DefaultPort = 8791;

/** Ten minutes: long enough to come back to the desk, short enough that an agent is not stuck all day. */
export const DefaultApprovalTimeoutSecs = 600;

/** Defaults of the HTTP deadlines and caps (see Limits). */
export const HttpDefaults = {
  /** A client on the same machine sends its headers in milliseconds; 15 s is generous for one further away. */
  HeadersTimeoutMs: 15_000,
  /** 8 MiB (the largest body) in 30 s is 270 KiB/s: any real client is faster, a trickling one is cut. */
  BodyTimeoutMs: 30_000,
  /** Far more than a browser (6 per origin) and a few agents open before their first request. */
  UnauthenticatedConnections: 32,
} as const;

export { defaultHome };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function intFrom(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`);
  return n;
}

function trackingFrom(raw: string | undefined): 'auto' | 'environment' {
  const v = (raw || 'auto').toLowerCase();
  if (v !== 'auto' && v !== 'environment') throw new ConfigError(`PTYDECK_PROCESS_TRACKING must be auto or environment (got ${JSON.stringify(raw)})`);
  return v;
}

export interface Flags {
  port?: string;
  host?: string;
  allowedHosts?: string[];
  tlsCert?: string;
  tlsKey?: string;
  insecure?: boolean;
}

function readPem(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${flag}: cannot read ${path}: ${(err as Error).message}`);
  }
}

/**
 * TLS from --tls-cert/--tls-key (or PTYDECK_TLS_CERT/_KEY). Off loopback, a token crosses the network
 * with every request: without TLS that needs the person's explicit --insecure.
 */
function tlsFrom(host: string, flags: Flags, env: NodeJS.ProcessEnv): { tls: ServerConfig['tls']; insecure: boolean } {
  const certPath = flags.tlsCert ?? env.PTYDECK_TLS_CERT;
  const keyPath = flags.tlsKey ?? env.PTYDECK_TLS_KEY;
  const insecure = flags.insecure === true;
  if (!!certPath !== !!keyPath) throw new ConfigError('--tls-cert and --tls-key go together: give both (PEM files), or neither');
  const tls = certPath && keyPath ? { cert: readPem('--tls-cert', certPath), key: readPem('--tls-key', keyPath) } : null;
  if (!tls && !insecure && !isLoopbackHost(host)) {
    throw new ConfigError(
      `listening on ${host} (not loopback) would send tokens in clear across the network: serve TLS with --tls-cert CERT.pem --tls-key KEY.pem, ` +
        `or keep the default 127.0.0.1 and reach it through an SSH tunnel (ssh -L 8791:127.0.0.1:8791 HOST) or a TLS reverse proxy (with --allowed-host NAME), or pass --insecure if you trust the network`,
    );
  }
  return { tls, insecure };
}

export function loadConfig(flags: Flags = {}, env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const backend = (env.AIO_SHELL_BACKEND || 'auto').toLowerCase();
  if (backend !== 'auto' && backend !== 'host' && backend !== 'tmux' && backend !== 'native') {
    throw new ConfigError(`AIO_SHELL_BACKEND must be auto, host, tmux or native (got ${JSON.stringify(env.AIO_SHELL_BACKEND)})`);
  }
  const defaults = defaultManagerConfig();
  const manager: ManagerConfig = {
    ...defaults,
    maxSessions: intFrom('AIO_SHELL_MAX_SESSIONS', env.AIO_SHELL_MAX_SESSIONS, defaults.maxSessions, 1, 10000),
    maxSessionsPerAgent: intFrom('PTYDECK_MAX_SESSIONS_PER_AGENT', env.PTYDECK_MAX_SESSIONS_PER_AGENT, defaults.maxSessionsPerAgent, 1, 10000),
    idleTimeoutSecs: intFrom('AIO_SHELL_SESSION_TIMEOUT_SECS', env.AIO_SHELL_SESSION_TIMEOUT_SECS, defaults.idleTimeoutSecs, 1, 365 * 86400),
    logBytes: intFrom('PTYDECK_LOG_BYTES', env.PTYDECK_LOG_BYTES, defaults.logBytes, 64 * 1024, 1024 * 1024 * 1024),
    memoryBudgetBytes: intFrom('PTYDECK_MEMORY_BUDGET_BYTES', env.PTYDECK_MEMORY_BUDGET_BYTES, defaults.memoryBudgetBytes, 1024 * 1024, 64 * 1024 * 1024 * 1024),
    teardownGraceMs: intFrom('PTYDECK_TEARDOWN_GRACE_MS', env.PTYDECK_TEARDOWN_GRACE_MS, defaults.teardownGraceMs, 0, 60000),
    shell: env.PTYDECK_SHELL || undefined,
    processTracking: trackingFrom(env.PTYDECK_PROCESS_TRACKING),
    defaultCwd: env.PTYDECK_CWD || defaults.defaultCwd,
  };
  const headersTimeoutMs = intFrom('PTYDECK_HEADERS_TIMEOUT_MS', env.PTYDECK_HEADERS_TIMEOUT_MS, HttpDefaults.HeadersTimeoutMs, 100, 3_600_000);
  const bodyTimeoutMs = intFrom('PTYDECK_BODY_TIMEOUT_MS', env.PTYDECK_BODY_TIMEOUT_MS, Math.max(HttpDefaults.BodyTimeoutMs, headersTimeoutMs), 100, 3_600_000);
  if (bodyTimeoutMs < headersTimeoutMs) throw new ConfigError(`PTYDECK_BODY_TIMEOUT_MS (${bodyTimeoutMs}) must be at least PTYDECK_HEADERS_TIMEOUT_MS (${headersTimeoutMs}): it covers the headers too`);
  const host = flags.host ?? env.PTYDECK_HOST ?? '127.0.0.1';
  return {
    host,
    ...tlsFrom(host, flags, env),
    port: intFrom('--port', flags.port ?? env.PTYDECK_PORT, DefaultPort, 0, 65535),
    allowedHosts: [...(flags.allowedHosts ?? []), ...(env.PTYDECK_ALLOWED_HOSTS ? env.PTYDECK_ALLOWED_HOSTS.split(',') : [])].map((h) => h.trim().toLowerCase()).filter(Boolean),
    home: defaultHome(env),
    tokenFromEnv: env.PTYDECK_TOKEN || null,
    backend,
    manager,
    viewerDir: null,
    floorLeaseSecs: intFrom('PTYDECK_FLOOR_LEASE_SECS', env.PTYDECK_FLOOR_LEASE_SECS, DefaultFloorLeaseSecs, 1, 7 * 86400),
    limits: {
      bodyBytes: intFrom('PTYDECK_MAX_BODY_BYTES', env.PTYDECK_MAX_BODY_BYTES, 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      headersTimeoutMs,
      bodyTimeoutMs,
      unauthenticatedConnections: intFrom('PTYDECK_MAX_UNAUTHENTICATED_CONNECTIONS', env.PTYDECK_MAX_UNAUTHENTICATED_CONNECTIONS, HttpDefaults.UnauthenticatedConnections, 1, 100000),
      inputBytes: intFrom('PTYDECK_MAX_INPUT_BYTES', env.PTYDECK_MAX_INPUT_BYTES, 1024 * 1024, 16, 1024 * 1024 * 1024),
      wsFrameBytes: intFrom('PTYDECK_MAX_WS_FRAME_BYTES', env.PTYDECK_MAX_WS_FRAME_BYTES, 2 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      socketsPerPrincipal: intFrom('PTYDECK_MAX_SOCKETS', env.PTYDECK_MAX_SOCKETS, 64, 1, 100000),
      createsPerMinute: intFrom('PTYDECK_MAX_CREATES_PER_MINUTE', env.PTYDECK_MAX_CREATES_PER_MINUTE, 120, 1, 1000000),
    },
    approvalTimeoutSecs: intFrom('PTYDECK_APPROVAL_TIMEOUT_SECS', env.PTYDECK_APPROVAL_TIMEOUT_SECS, DefaultApprovalTimeoutSecs, 1, 7 * 24 * 3600),
    timeline: parseTimelineSettings(env, intFrom, (m) => new ConfigError(m)),
  };
}
