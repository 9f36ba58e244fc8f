import type { ServerConfig } from './config';
import { ADMIN, TokenStore } from './api/auth';
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
import { SessionManager } from './terminal/manager';
import type { Feature, FeatureFactory } from './feature';

/** The features that ride on the core, in the order they start (see feature.ts). */
export const FEATURES: FeatureFactory[] = [];

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
  stop(): Promise<void>;
}

export function allDoors(viewerDir: string | null): Door[] {
  return [aioV1Door, aioV2Door, aioWsDoor, execdDoor, nativeDoor, tokensDoor, mcpDoor, viewerWsDoor, viewerStaticDoor(viewerDir)];
}

export async function startPtydeck(config: ServerConfig): Promise<Ptydeck> {
  ensureHome(config.home);
  const tokens = new TokenStore(config.home, config.tokenFromEnv);
  const manager = new SessionManager({ ...config.manager, personOwner: ADMIN.name, backend: config.backend, stateDir: config.home });
  // What native sessions of a server that died without closing them left running is ended first;
  // tmux sessions an earlier run left behind (after a quit or a crash) come back, with their ids.
  await manager.reapOrphans();
  manager.adoptDurableSessions();
  const features: Feature[] = FEATURES.map((make) => make({ manager, config, home: config.home }));
  const featureDoors = features.flatMap((f) => (f.door ? [f.door] : []));
  let server: RunningServer;
  try {
    server = await startServer({ manager, tokens, logins: new ViewerLogins(config.home), config, doors: [...allDoors(findViewerDir(config.viewerDir)), ...featureDoors] });
  } catch (err) {
    await Promise.all(features.map((f) => f.stop?.()));
    manager.dispose();
    throw err;
  }
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
  const onExit = (): void => manager.killAllSync();
  process.on('exit', onExit);
  let stopped: Promise<void> | null = null;
  return {
    manager,
    tokens,
    server,
    runtimeFile,
    loginLink: () => loginLink(server.ctx),
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
