import { join } from 'node:path';
import type { Ptydeck } from './app';
import type { ServerConfig } from './config';

/**
 * The desktop app's wiring, written against the few Electron APIs it uses and handed the real module by
 * src/main/index.ts (the only file that imports electron). Tests hand it a stand-in.
 *
 * - one instance at a time; a second launch focuses the first window
 * - the server starts on loopback (the configured port, or any free one if that is taken)
 * - the window loads the viewer from that server, with context isolation on, node integration off and a
 *   sandboxed renderer; the preload asks for the API base and credential over IPC
 * - closing the window keeps every session (the app lives on in the tray); quitting ends them
 * - the viewer may raise desktop notifications (a command failed, a session waits for input)
 */
export interface ElectronApi {
  app: {
    requestSingleInstanceLock(): boolean;
    quit(): void;
    exit(code?: number): void;
    whenReady(): Promise<unknown>;
    on(event: string, listener: (...args: any[]) => void): unknown;
    setAppUserModelId?(id: string): void;
  };
  BrowserWindow: new (options: Record<string, unknown>) => WindowLike;
  ipcMain: { on(channel: string, listener: (event: IpcEventLike, ...args: any[]) => void): unknown };
  Notification: { new (options: { title: string; body: string }): { show(): void }; isSupported(): boolean };
  Tray?: new (image: unknown) => { setToolTip(t: string): void; setContextMenu(m: unknown): void; on(e: string, l: () => void): unknown };
  Menu?: { buildFromTemplate(template: { label: string; click?: () => void; type?: string }[]): unknown };
  nativeImage?: { createEmpty(): unknown };
  dialog?: { showMessageBoxSync(options: Record<string, unknown>): number };
  shell?: { openExternal(url: string): Promise<void> | void };
}

export interface WindowLike {
  loadURL(url: string): Promise<void> | void;
  show(): void;
  hide(): void;
  focus(): void;
  isMinimized(): boolean;
  restore(): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  webContents: {
    id: number;
    setWindowOpenHandler(handler: (details: { url: string }) => { action: 'deny' | 'allow' }): void;
    on(event: string, listener: (...args: any[]) => void): unknown;
  };
}

export interface IpcEventLike {
  sender: { id: number };
  returnValue?: unknown;
}

export interface MainDeps {
  loadConfig(): ServerConfig;
  startPtydeck(config: ServerConfig): Promise<Ptydeck>;
  preloadPath?: string;
  log?: (msg: string) => void;
}

export interface RunningApp {
  ptydeck: Ptydeck;
  window: WindowLike;
  /** What quitting does: confirm, then close every session and stop the server. */
  quit(): Promise<void>;
}

export async function runDesktopApp(electron: ElectronApi, deps: MainDeps): Promise<RunningApp | null> {
  const { app } = electron;
  const log = deps.log ?? ((m: string) => console.log(m));
  if (!app.requestSingleInstanceLock()) {
    log('ptydeck: another instance is running; focusing it');
    app.quit();
    return null;
  }
  app.setAppUserModelId?.('dev.ptydeck');
  await app.whenReady();

  const config = deps.loadConfig();
  let ptydeck: Ptydeck;
  try {
    ptydeck = await deps.startPtydeck(config);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    // A headless `ptydeck serve` may hold the default port: the app takes any free one.
    ptydeck = await deps.startPtydeck({ ...config, port: 0 });
  }
  const origin = ptydeck.server.url;

  const window = new electron.BrowserWindow({
    width: 1280,
    height: 800,
    minWidth: 640,
    minHeight: 400,
    title: 'ptydeck',
    backgroundColor: '#0f1115',
    show: true,
    webPreferences: {
      preload: deps.preloadPath ?? join(__dirname, '../preload/index.js'),
      contextIsolation: true,
      nodeIntegration: false,
      sandbox: true,
      webSecurity: true,
    },
  });
  // Links open in the person's browser; the window itself never leaves our origin.
  window.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void electron.shell?.openExternal(url);
    return { action: 'deny' };
  });
  window.webContents.on('will-navigate', (event: { preventDefault(): void }, url: string) => {
    if (!url.startsWith(origin + '/')) event.preventDefault();
  });

  // The credential goes only to our own window, and only over IPC (never in a URL or a log).
  electron.ipcMain.on('ptydeck:bootstrap', (event) => {
    event.returnValue = event.sender.id === window.webContents.id ? { apiBase: origin, token: ptydeck.tokens.adminToken } : null;
  });
  electron.ipcMain.on('ptydeck:notify', (event, payload: { title?: unknown; body?: unknown }) => {
    if (event.sender.id !== window.webContents.id || !electron.Notification.isSupported()) return;
    const title = String(payload?.title ?? 'ptydeck').slice(0, 200);
    const body = String(payload?.body ?? '').slice(0, 500);
    new electron.Notification({ title, body }).show();
  });

  let quitting = false;
  const quit = async (): Promise<void> => {
    if (quitting) return;
    const live = ptydeck.manager.list().filter((s) => s.isAlive && !s.isDurable).length;
    const durable = ptydeck.manager.list().filter((s) => s.isAlive && s.isDurable).length;
    if (live + durable > 0 && electron.dialog) {
      const ends = live ? `${live} terminal session${live === 1 ? '' : 's'} will be ended, with every process started in them. ` : '';
      const stays = durable ? `${durable} session${durable === 1 ? '' : 's'} will keep running and come back when ptydeck starts again. ` : '';
      const choice = electron.dialog.showMessageBoxSync({
        type: 'question',
        buttons: [live ? 'Quit and end sessions' : 'Quit', 'Cancel'],
        defaultId: 1,
        cancelId: 1,
        message: `Quit ptydeck?`,
        detail: `${ends}${stays}Close the window instead to keep everything running.`,
      });
      if (choice !== 0) return;
    }
    quitting = true;
    await ptydeck.stop();
    app.exit(0);
  };

  window.on('close', (event: { preventDefault(): void }) => {
    if (quitting) return;
    // Closing the window keeps the agents' sessions: the app lives on in the tray.
    event.preventDefault();
    window.hide();
  });
  app.on('before-quit', (event: { preventDefault(): void }) => {
    if (quitting) return;
    event.preventDefault();
    void quit();
  });
  app.on('window-all-closed', () => {
    // Stay alive: sessions outlive the window.
  });
  const showWindow = (): void => {
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
  };
  app.on('second-instance', showWindow);
  app.on('activate', showWindow);

  if (electron.Tray && electron.Menu && electron.nativeImage) {
    const tray = new electron.Tray(electron.nativeImage.createEmpty());
    tray.setToolTip('ptydeck');
    tray.setContextMenu(
      electron.Menu.buildFromTemplate([
        { label: 'Show ptydeck', click: showWindow },
        { type: 'separator', label: '' },
        { label: 'Quit', click: () => void quit() },
      ]),
    );
    tray.on('click', showWindow);
  }

  await window.loadURL(origin + '/');
  log(`ptydeck: API at ${origin} (runtime file ${ptydeck.runtimeFile})`);
  return { ptydeck, window, quit };
}
