// The Electron entry: the only main-process file that imports electron. Everything else is in
// electron-main.ts (tested with a stand-in for this module) and the headless server it starts.
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeImage, Notification, safeStorage, shell, Tray } from 'electron';
import { join } from 'node:path';
// electron-vite copies these into the build and gives their paths at run time.
import iconPath from '../../resources/icon.png?asset';
import trayIconPath from '../../resources/tray.png?asset';
import { startPtydeck } from './app';
import { loadConfig } from './config';
import { desktopFlags, reportStartupError, runDesktopApp, type ElectronApi } from './electron-main';
import { findRunningServer } from './running-server';
import { safeStorageSecretStore } from './secret-store';
import { environmentWithSecretsTaken } from './secret-env';

const electron = { app, BrowserWindow, ipcMain, Notification, Tray, Menu, nativeImage, dialog, shell } as unknown as ElectronApi;
// `electron <app> --port N` in development; the packaged app has no app path in its arguments.
const flags = desktopFlags(process.argv.slice(app.isPackaged ? 1 : 2));

runDesktopApp(electron, {
  // The admin token may come in the environment: read it once, and leave no trace of it there.
  loadConfig: (f) => loadConfig(f, environmentWithSecretsTaken()),
  // Remote tokens go to the OS keychain (runDesktopApp starts the server once the app is ready, when
  // safeStorage can answer).
  startPtydeck: (config) => startPtydeck(config, { secretStore: safeStorageSecretStore(safeStorage) }),
  findRunningServer,
  flags,
  preloadPath: join(__dirname, '../preload/index.js'),
  iconPath,
  trayIconPath,
}).catch((err: unknown) => {
  // After whenReady, so that the dialog can show.
  void app.whenReady().then(() => reportStartupError(electron, err));
});
