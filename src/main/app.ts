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
import { SessionManager } from './terminal/manager';
import type { Feature, FeatureFactory } from './feature';
import { deckFeature } from './deck';
import { PersonPresence } from './presence';

/** The features that ride on the core, in the order they start (see feature.ts). */
export const FEATURES: FeatureFactory[] = [deckFeature];

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
  stop(): Promise<void>;
}

export function allDoors(viewerDir: string | null): Door[] {
  return [aioV1Door, aioV2Door, aioWsDoor, execdDoor, nativeDoor, tokensDoor, mcpDoor, viewerWsDoor, viewerStaticDoor(viewerDir)];
}

export async function startPtydeck(config: ServerConfig): Promise<Ptydeck> {
  ensureHome(config.home);
  const tokens = new TokenStore(config.home, config.tokenFromEnv);
  const manager = new SessionManager({ ...config.manager, backend: config.backend, stateDir: config.home });
  // tmux sessions an earlier run left behind (after a quit or a crash) come back first, with their ids.
  manager.adoptDurableSessions();
  const presence = new PersonPresence();
  const features: Feature[] = FEATURES.map((make) => make({ manager, config, home: config.home, presence }));
  const featureDoors = features.flatMap((f) => (f.door ? [f.door] : []));
  let server: RunningServer;
  try {
    server = await startServer({ manager, tokens, config, presence, doors: [...allDoors(findViewerDir(config.viewerDir)), ...featureDoors] });
  } catch (err) {
    await Promise.all(features.map((f) => f.stop?.()));
    manager.dispose();
    throw err;
  }
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
  const onExit = (): void => manager.killAllSync();
  process.on('exit', onExit);
  let stopped: Promise<void> | null = null;
  return {
    manager,
    tokens,
    server,
    runtimeFile,
    viewerLoginUrl,
    stop: () =>
      (stopped ??= (async () => {
        process.off('exit', onExit);
        await server.close();
        await manager.shutdown();
        // After the sessions: a feature hears every session's last events before it stops.
        for (const f of features) await f.stop?.();
        manager.dispose();
        removeRuntimeFile(config.home, process.pid);
      })()),
  };
}
