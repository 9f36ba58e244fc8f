import { defaultHome } from './home';
import { defaultManagerConfig, type ManagerConfig } from './terminal/manager';
import { parseTimelineSettings, type TimelineSettings } from './timeline/settings';

/**
 * Flags and environment in one place. AIO's own variables are honoured so that a deployment written
 * for AIO Sandbox keeps its settings: AIO_SHELL_BACKEND, AIO_SHELL_MAX_SESSIONS, AIO_SHELL_SESSION_TIMEOUT_SECS.
 */
export interface ServerConfig {
  host: string;
  port: number;
  /** Extra Host header names accepted besides loopback (for a reverse proxy you run yourself). */
  allowedHosts: string[];
  home: string;
  /** The admin (person's) token from PTYDECK_TOKEN, else generated once and kept in the home directory. */
  tokenFromEnv: string | null;
  backend: 'auto' | 'host' | 'tmux' | 'native';
  manager: ManagerConfig;
  /** Where the built viewer lives; null serves a notice instead. */
  viewerDir: string | null;
  limits: Limits;
  /** The timeline and recordings (src/main/timeline/settings.ts). */
  timeline: TimelineSettings;
}

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
  return {
    host: flags.host ?? env.PTYDECK_HOST ?? '127.0.0.1',
    port: intFrom('--port', flags.port ?? env.PTYDECK_PORT, DefaultPort, 0, 65535),
    allowedHosts: [...(flags.allowedHosts ?? []), ...(env.PTYDECK_ALLOWED_HOSTS ? env.PTYDECK_ALLOWED_HOSTS.split(',') : [])].map((h) => h.trim().toLowerCase()).filter(Boolean),
    home: defaultHome(env),
    tokenFromEnv: env.PTYDECK_TOKEN || null,
    backend,
    manager,
    viewerDir: null,
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
    timeline: parseTimelineSettings(env, intFrom, (m) => new ConfigError(m)),
  };
}
