import type { ServerConfig } from './config';
import { TokenStore } from './api/auth';
import { aioV1Door } from './api/aio-v1';
import { aioV2Door } from './api/aio-v2';
import { aioWsDoor } from './api/aio-ws';
import { execdDoor } from './api/execd';
import { nativeDoor } from './api/native';
import { tokensDoor } from './api/tokens';
import { mcpDoor } from './api/mcp';
import { viewerWsDoor } from './api/viewer-ws';
import { startServer, type Door, type RunningServer } from './api/server';
import { findViewerDir, viewerStaticDoor } from './api/viewer-static';
import { ensureHome, removeRuntimeFile, writeRuntimeFile } from './home';
import { acquireServerLock } from './server-lock';
import { SessionManager } from './terminal/manager';
import type { Feature, FeatureFactory } from './feature';
import { deckFeature } from './deck';
import { PersonPresence } from './presence';
import { timelineFeature } from './timeline/timeline-feature';

/** The features that ride on the core, in the order they start (see feature.ts). */
export const FEATURES: FeatureFactory[] = [timelineFeature, deckFeature];

/**
 * ptydeck without a window: the session manager, the credentials, and the server with every door.
 * The CLI (`ptydeck serve`) and the Electron main process both start exactly this.
 */
export interface Ptydeck {
  manager: SessionManager;
  tokens: TokenStore;
  server: RunningServer;
  runtimeFile: string;
  /** The viewer URL with the admin token, for a person to open once (it is exchanged for a cookie). */
  viewerLoginUrl: string;
  /**
   * Stops the server. `keep-durable` (quitting) leaves durable sessions running for the next start to
   * take back; `end-everything` (tests, which must leave nothing behind) ends them too, and every
   * process the server started for them.
   */
  stop(mode?: StopMode): Promise<void>;
}

export type StopMode = 'keep-durable' | 'end-everything';

export function allDoors(viewerDir: string | null): Door[] {
  return [aioV1Door, aioV2Door, aioWsDoor, execdDoor, nativeDoor, tokensDoor, mcpDoor, viewerWsDoor, viewerStaticDoor(viewerDir)];
}

export async function startPtydeck(config: ServerConfig): Promise<Ptydeck> {
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
    const sessions = (manager = new SessionManager({ ...config.manager, backend: config.backend, stateDir: config.home }));
    // Terminals an earlier run left behind (PTY host, tmux) come back first, with their output, before any door is asked.
    await sessions.adoptDurableSessions();
    const presence = new PersonPresence();
    features = FEATURES.map((make) => make({ manager: sessions, config, home: config.home, presence }));
    const featureDoors = features.flatMap((f) => (f.door ? [f.door] : []));
    server = await startServer({ manager: sessions, tokens, config, presence, doors: [...allDoors(findViewerDir(config.viewerDir)), ...featureDoors] });
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
  const viewerLoginUrl = `${server.url}/?token=${encodeURIComponent(tokens.adminToken)}`;
  const runtimeFile = writeRuntimeFile(config.home, {
    url: server.url,
    host: config.host,
    port: server.port,
    pid: process.pid,
    token: tokens.adminToken,
    viewerUrl: viewerLoginUrl,
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
    viewerLoginUrl,
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
