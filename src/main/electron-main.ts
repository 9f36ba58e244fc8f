import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Ptydeck } from './app';
import type { Flags, ServerConfig } from './config';
import type { RunningServerLookup } from './running-server';
import { ServerRunningError } from './server-lock';

/**
 * The desktop app's wiring, written against the few Electron APIs it uses and handed the real module by
 * src/main/index.ts (the only file that imports electron). Tests hand it a stand-in.
 *
 * - one instance at a time; a second launch shows the first one's window
 * - the server starts on loopback (the configured port, or any free one if another program holds it);
 *   when a headless `ptydeck serve` already runs on the same home, the window shows that server instead
 *   of starting a second one
 * - the window loads the viewer from that server, with context isolation on, node integration off and a
 *   sandboxed renderer; the preload asks for the API base and credential over IPC
 * - closing the window keeps every session (the app lives on in the tray); quitting asks first, without
 *   blocking the main process (the server and every terminal keep running while the question is open),
 *   then ends the sessions that do not survive a restart
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
    setPath?(name: string, path: string): void;
  };
  BrowserWindow: new (options: Record<string, unknown>) => WindowLike;
  ipcMain: { on(channel: string, listener: (event: IpcEventLike, ...args: any[]) => void): unknown };
  Notification: { new (options: { title: string; body: string }): { show(): void }; isSupported(): boolean };
  Tray?: new (image: unknown) => TrayLike;
  Menu?: { buildFromTemplate(template: { label: string; click?: () => void; type?: string }[]): unknown };
  nativeImage?: { createFromPath(path: string): unknown };
  dialog?: {
    showMessageBox(window: WindowLike, options: Record<string, unknown>): Promise<{ response: number }>;
    showErrorBox(title: string, content: string): void;
  };
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

export interface TrayLike {
  setToolTip(t: string): void;
  setContextMenu(m: unknown): void;
  on(e: string, l: () => void): unknown;
}

export interface IpcEventLike {
  sender: { id: number };
  returnValue?: unknown;
}

/** The app's own command-line flags, among Electron's and Chromium's switches. */
export interface DesktopFlags extends Flags {
  /** Quit without the confirmation dialog (tests, scripts). */
  quitWithoutConfirm: boolean;
  /** Electron's profile directory (the single-instance lock lives there): tests give each run its own. */
  userDataDir?: string;
}

/** Reads `--port N`, `--host H`, `--quit-without-confirm` and `--user-data-dir DIR`; ignores other switches. */
export function desktopFlags(argv: string[]): DesktopFlags {
  const { values } = parseArgs({
    args: argv,
    strict: false,
    allowPositionals: true,
    options: { port: { type: 'string' }, host: { type: 'string' }, 'quit-without-confirm': { type: 'boolean' }, 'user-data-dir': { type: 'string' } },
  });
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { port: str(values.port), host: str(values.host), quitWithoutConfirm: values['quit-without-confirm'] === true, userDataDir: str(values['user-data-dir']) };
}

export interface MainDeps {
  loadConfig(flags: Flags): ServerConfig;
  startPtydeck(config: ServerConfig): Promise<Ptydeck>;
  /** The server already running on a home (runtime file and lock), to show it instead of starting one. */
  findRunningServer(home: string): Promise<RunningServerLookup>;
  flags?: DesktopFlags;
  preloadPath?: string;
  /** The window's icon (Linux, Windows) and the tray's. */
  iconPath?: string;
  trayIconPath?: string;
  log?: (msg: string) => void;
}

export interface RunningApp {
  /** The server this app started; null when it shows one that already ran on its home. */
  ptydeck: Ptydeck | null;
  /** Where the viewer's API is, and the credential the window uses. */
  server: { url: string; token: string };
  window: WindowLike;
  /** Held here for the app's life: a tray nothing references is collected, and disappears. */
  tray: TrayLike | null;
  /** What quitting does: ask (unless nothing would end), then end the sessions that do not survive and stop the server. */
  quit(): Promise<void>;
}

/** A start that failed: said in a dialog (a person who started the app from a menu sees no console), then exit. */
export function reportStartupError(electron: ElectronApi, err: unknown, log: (m: string) => void = console.error): void {
  const message = err instanceof Error ? err.message : String(err);
  log(`ptydeck: could not start: ${err instanceof Error && err.stack ? err.stack : message}`);
  try {
    electron.dialog?.showErrorBox('ptydeck could not start', message);
  } finally {
    electron.app.exit(1);
  }
}

export async function runDesktopApp(electron: ElectronApi, deps: MainDeps): Promise<RunningApp | null> {
  const { app } = electron;
  const log = deps.log ?? ((m: string) => console.log(m));
  const flags = deps.flags ?? { quitWithoutConfirm: false };
  // Before the single-instance lock, which lives in this directory.
  if (flags.userDataDir) app.setPath?.('userData', flags.userDataDir);
  if (!app.requestSingleInstanceLock()) {
    log('ptydeck: another instance is running; showing its window');
    app.quit();
    return null;
  }
  // Registered before the server starts: a second launch during the start must not be lost.
  let window: WindowLike | null = null;
  const showWindow = (): void => {
    if (!window) return;
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
  };
  app.on('second-instance', showWindow);
  app.on('activate', showWindow);
  app.setAppUserModelId?.('dev.ptydeck');
  await app.whenReady();

  const config = deps.loadConfig(flags);
  const { owned, server } = await startOrFindServer(config, deps, log);
  const origin = server.url;

  const win = new electron.BrowserWindow({
    width: 1280,
    height: 800,
    minWidth: 640,
    minHeight: 400,
    title: 'ptydeck',
    backgroundColor: '#0f1115',
    show: true,
    ...(deps.iconPath ? { icon: deps.iconPath } : {}),
    webPreferences: {
      preload: deps.preloadPath ?? join(__dirname, '../preload/index.js'),
      contextIsolation: true,
      nodeIntegration: false,
      sandbox: true,
      webSecurity: true,
    },
  });
  window = win;
  // Links open in the person's browser; the window itself never leaves our origin.
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void electron.shell?.openExternal(url);
    return { action: 'deny' };
  });
  win.webContents.on('will-navigate', (event: { preventDefault(): void }, url: string) => {
    if (!url.startsWith(origin + '/')) event.preventDefault();
  });

  // The credential goes only to our own window, and only over IPC (never in a URL or a log).
  electron.ipcMain.on('ptydeck:bootstrap', (event) => {
    event.returnValue = event.sender.id === win.webContents.id ? { apiBase: origin, token: server.token } : null;
  });
  electron.ipcMain.on('ptydeck:notify', (event, payload: { title?: unknown; body?: unknown }) => {
    if (event.sender.id !== win.webContents.id || !electron.Notification.isSupported()) return;
    const title = String(payload?.title ?? 'ptydeck').slice(0, 200);
    const body = String(payload?.body ?? '').slice(0, 500);
    new electron.Notification({ title, body }).show();
  });

  const quit = quitter(electron, win, owned, flags, log);
  win.on('close', (event: { preventDefault(): void }) => {
    if (quit.started()) return;
    // Closing the window keeps the agents' sessions: the app lives on in the tray.
    event.preventDefault();
    win.hide();
  });
  app.on('before-quit', (event: { preventDefault(): void }) => {
    if (quit.started()) return;
    event.preventDefault();
    void quit.run();
  });
  app.on('window-all-closed', () => {
    // Stay alive: sessions outlive the window.
  });

  let tray: TrayLike | null = null;
  if (electron.Tray && electron.Menu && electron.nativeImage && deps.trayIconPath) {
    tray = new electron.Tray(electron.nativeImage.createFromPath(deps.trayIconPath));
    tray.setToolTip(owned ? 'ptydeck' : `ptydeck (showing the server at ${origin})`);
    tray.setContextMenu(
      electron.Menu.buildFromTemplate([
        { label: 'Show ptydeck', click: showWindow },
        { type: 'separator', label: '' },
        { label: owned ? 'Quit (ends sessions)' : 'Quit (the server keeps running)', click: () => void quit.run() },
      ]),
    );
    tray.on('click', showWindow);
  }

  await win.loadURL(origin + '/');
  log(owned ? `ptydeck: API at ${origin} (runtime file ${owned.runtimeFile})` : `ptydeck: showing the server already running at ${origin}`);
  return { ptydeck: owned, server, window: win, tray, quit: quit.run };
}

async function startOrFindServer(config: ServerConfig, deps: MainDeps, log: (m: string) => void): Promise<{ owned: Ptydeck | null; server: { url: string; token: string } }> {
  const started = (p: Ptydeck) => ({ owned: p, server: { url: p.server.url, token: p.tokens.adminToken } });
  try {
    return started(await deps.startPtydeck(config));
  } catch (err) {
    if (err instanceof ServerRunningError) {
      // A headless `ptydeck serve` on this home: show it rather than fight it for the home.
      const running = await deps.findRunningServer(config.home);
      if (!running.found) throw new Error(`${err.message} (${running.why})`);
      log(`ptydeck: a server already runs on ${config.home} (pid ${running.info.pid}); the window shows it`);
      return { owned: null, server: { url: running.info.url, token: running.info.token } };
    }
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    // Another program (or a server on another home) holds the port: the app takes any free one, and says so
    // (agents find the real one in the runtime file).
    const p = await deps.startPtydeck({ ...config, port: 0 });
    log(`ptydeck: port ${config.port} is in use; serving at ${p.server.url} instead`);
    return started(p);
  }
}

/** The quit sequence: at most one question at a time, and an exit whatever the stop does. */
function quitter(electron: ElectronApi, win: WindowLike, owned: Ptydeck | null, flags: DesktopFlags, log: (m: string) => void) {
  let quitting = false;
  let asking: Promise<boolean> | null = null;

  const confirmed = (): Promise<boolean> => {
    if (!owned || flags.quitWithoutConfirm || !electron.dialog) return Promise.resolve(true);
    const { ending, kept } = owned.manager.shutdownPlan();
    if (!ending.length && !kept.length) return Promise.resolve(true);
    const n = (count: number, what: string) => `${count} ${what}${count === 1 ? '' : 's'}`;
    const ends = ending.length ? `${n(ending.length, 'terminal session')} will be ended, with every process started in them. ` : '';
    const stays = kept.length ? `${n(kept.length, 'tmux session')} will keep running and come back when ptydeck starts again. ` : '';
    // The async dialog: the sync one would stall the main process, and with it the server and every terminal.
    asking ??= electron.dialog
      .showMessageBox(win, {
        type: 'question',
        buttons: [ending.length ? 'Quit and end sessions' : 'Quit', 'Cancel'],
        defaultId: 1,
        cancelId: 1,
        message: 'Quit ptydeck?',
        detail: `${ends}${stays}Close the window instead to keep everything running.`,
      })
      .then((r) => r.response === 0)
      .finally(() => (asking = null));
    return asking;
  };

  const run = async (): Promise<void> => {
    if (quitting) return;
    let go: boolean;
    try {
      go = await confirmed();
    } catch (err) {
      log(`ptydeck: the quit dialog failed (${(err as Error).message}); quitting`);
      go = true;
    }
    if (!go || quitting) return;
    quitting = true;
    let code = 0;
    try {
      await owned?.stop();
    } catch (err) {
      // Whatever went wrong, the app must still be able to quit: say it, then exit.
      code = 1;
      const message = (err as Error).message ?? String(err);
      log(`ptydeck: stopping failed: ${message}`);
      electron.dialog?.showErrorBox('ptydeck did not stop cleanly', `${message}\n\nSome sessions may still be running.`);
    } finally {
      electron.app.exit(code);
    }
  };
  return { run, started: () => quitting };
}
