import type { ServerConfig } from './config';
import { ADMIN, TokenStore } from './api/auth';
import { aioBashDoor } from './api/aio-bash';
import { aioV1Door } from './api/aio-v1';
import { aioV2Door } from './api/aio-v2';
import { aioWsDoor } from './api/aio-ws';
import { execdDoor } from './api/execd';
import { nativeDoor } from './api/native';
import { tokensDoor } from './api/tokens';
import { mcpDoor } from './api/mcp';
import { viewerWsDoor } from './api/viewer-ws';
import { startServer, type Door, type RunningServer } from './api/server';
import { findViewerDir, loginLink, viewerStaticDoor } from './api/viewer-static';
import { ViewerLogins } from './api/viewer-login';
import { ensureHome, removeRuntimeFile, writeRuntimeFile } from './home';
import { acquireServerLock } from './server-lock';
import { SessionManager } from './terminal/manager';
import type { Feature, FeatureEvents, FeatureFactory } from './feature';
import { Emitter } from './terminal/emitter';
import { deckFeature } from './deck';
import { PersonPresence } from './presence';
import { remotesFeature } from './remotes/feature';
import { timelineFeature } from './timeline/timeline-feature';
import { approvalsFeature } from './approvals';
import { fileSecretStore, type SecretStore } from './secret-store';

/** The features that ride on the core, in the order they start (see feature.ts). */
export const FEATURES: FeatureFactory[] = [timelineFeature, approvalsFeature, deckFeature, remotesFeature];

/** What only the embedding process can supply (the Electron entry: the OS keychain). */
export interface PtydeckExtras {
  secretStore?: SecretStore;
}

/**
 * ptydeck without a window: the session manager, the credentials, and the server with every door.
 * The CLI (`ptydeck serve`) and the Electron main process both start exactly this.
 */
export interface Ptydeck {
  manager: SessionManager;
  tokens: TokenStore;
  server: RunningServer;
  runtimeFile: string;
  /** A one-time login link to the viewer (works once, within a minute); each call mints a new one. */
  loginLink(): string;
  /**
   * Stops the server. `keep-durable` (quitting) leaves durable sessions running for the next start to
   * take back; `end-everything` (tests, which must leave nothing behind) ends them too, and every
   * process the server started for them.
   */
  stop(mode?: StopMode): Promise<void>;
}

export type StopMode = 'keep-durable' | 'end-everything';

export function allDoors(viewerDir: string | null): Door[] {
  return [aioV1Door, aioBashDoor, aioV2Door, aioWsDoor, execdDoor, nativeDoor, tokensDoor, mcpDoor, viewerWsDoor, viewerStaticDoor(viewerDir)];
}

export async function startPtydeck(config: ServerConfig, extras: PtydeckExtras = {}): Promise<Ptydeck> {
  ensureHome(config.home);
  // Before anything touches the home: a second server on it must not adopt the first one's sessions or
  // overwrite its runtime file (this throws ServerRunningError, naming the running one).
  const lock = await acquireServerLock(config.home);
  let manager: SessionManager | null = null;
  let features: Feature[] = [];
  let tokens: TokenStore;
  let server: RunningServer;
  try {
    tokens = new TokenStore(config.home, config.tokenFromEnv);
    const sessions = (manager = new SessionManager({ ...config.manager, personOwner: ADMIN.name, backend: config.backend, stateDir: config.home }));
    // What in-process sessions of a server that died without closing them left running is ended first.
    await sessions.reapOrphans();
    const events = new Emitter<FeatureEvents>();
    const presence = new PersonPresence();
    features = FEATURES.map((make) => make({ manager: sessions, config, home: config.home, events, secrets: extras.secretStore ?? fileSecretStore, presence }));
    await Promise.all(features.map((f) => f.ready));
    // Terminals an earlier run left behind (PTY host, tmux) come back, with their output, before any door
    // is asked, and after the features are ready: a feature hears of them, and a session gated before
    // the restart finds its gate.
    await sessions.adoptDurableSessions();
    const featureDoors = features.flatMap((f) => (f.door ? [f.door] : []));
    server = await startServer({ manager: sessions, tokens, logins: new ViewerLogins(config.home), config, presence, doors: [...allDoors(findViewerDir(config.viewerDir)), ...featureDoors] });
  } catch (err) {
    await Promise.all(features.map((f) => f.stop?.()));
    // Sessions just adopted stay running in tmux, as after a quit.
    await manager?.shutdown();
    manager?.dispose();
    await lock.release();
    throw err;
  }
  const sessions = manager;
  lock.announce(server.url);
  const runtimeFile = writeRuntimeFile(config.home, {
    url: server.url,
    host: config.host,
    port: server.port,
    pid: process.pid,
    token: tokens.adminToken,
    // The viewer's address, no credential: a person signs in with a login link (`ptydeck url`).
    viewerUrl: `${server.url}/`,
    startedAt: new Date().toISOString(),
  });
  // Whatever happens to this process, no shell it started outlives it (tmux sessions excepted).
  const onExit = (): void => sessions.killAllSync();
  process.on('exit', onExit);
  let stopped: Promise<void> | null = null;
  return {
    manager: sessions,
    tokens,
    server,
    runtimeFile,
    loginLink: () => loginLink(server.ctx),
    stop: (mode: StopMode = 'keep-durable') =>
      (stopped ??= (async () => {
        process.off('exit', onExit);
        try {
          await server.close();
          await sessions.shutdown({ keepDurable: mode === 'keep-durable' });
          // After the sessions: a feature hears every session's last events before it stops.
          for (const f of features) await f.stop?.();
          sessions.dispose();
          removeRuntimeFile(config.home, process.pid);
        } finally {
          // Last: until the runtime file is gone, no other server may take this home.
          await lock.release();
        }
      })()),
  };
}
