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
  /**
   * PTYDECK_FLOOR_LEASE_SECS: when the person holds a session's floor and no viewer of theirs has been
   * connected for this long, the floor returns to the agent (a floor held by nobody locks the agent out).
   */
  floorLeaseSecs: number;
  /** The timeline and recordings (src/main/timeline/settings.ts). */
  timeline: TimelineSettings;
}

/** default: PTYDECK_FLOOR_LEASE_SECS. A minute covers a page reload, a server restart or a brief network drop. */
export const DefaultFloorLeaseSecs = 60;

export interface Limits {
  bodyBytes: number;
  inputBytes: number;
  wsFrameBytes: number;
  socketsPerPrincipal: number;
  createsPerMinute: number;
}

export const DefaultPort = 8791;

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
    idleTimeoutSecs: intFrom('AIO_SHELL_SESSION_TIMEOUT_SECS', env.AIO_SHELL_SESSION_TIMEOUT_SECS, defaults.idleTimeoutSecs, 1, 365 * 86400),
    logBytes: intFrom('PTYDECK_LOG_BYTES', env.PTYDECK_LOG_BYTES, defaults.logBytes, 64 * 1024, 1024 * 1024 * 1024),
    memoryBudgetBytes: intFrom('PTYDECK_MEMORY_BUDGET_BYTES', env.PTYDECK_MEMORY_BUDGET_BYTES, defaults.memoryBudgetBytes, 1024 * 1024, 64 * 1024 * 1024 * 1024),
    teardownGraceMs: intFrom('PTYDECK_TEARDOWN_GRACE_MS', env.PTYDECK_TEARDOWN_GRACE_MS, defaults.teardownGraceMs, 0, 60000),
    shell: env.PTYDECK_SHELL || undefined,
    defaultCwd: env.PTYDECK_CWD || defaults.defaultCwd,
  };
  return {
    host: flags.host ?? env.PTYDECK_HOST ?? '127.0.0.1',
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
      inputBytes: intFrom('PTYDECK_MAX_INPUT_BYTES', env.PTYDECK_MAX_INPUT_BYTES, 1024 * 1024, 16, 1024 * 1024 * 1024),
      wsFrameBytes: intFrom('PTYDECK_MAX_WS_FRAME_BYTES', env.PTYDECK_MAX_WS_FRAME_BYTES, 2 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      socketsPerPrincipal: intFrom('PTYDECK_MAX_SOCKETS', env.PTYDECK_MAX_SOCKETS, 64, 1, 100000),
      createsPerMinute: intFrom('PTYDECK_MAX_CREATES_PER_MINUTE', env.PTYDECK_MAX_CREATES_PER_MINUTE, 120, 1, 1000000),
    },
    timeline: parseTimelineSettings(env, intFrom, (m) => new ConfigError(m)),
  };
}
