// The Electron entry: the only main-process file that imports electron. Everything else is in
// electron-main.ts (tested with a stand-in for this module) and the headless server it starts.
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeImage, Notification, shell, Tray } from 'electron';
import { join } from 'node:path';
// electron-vite copies these into the build and gives their paths at run time.
import iconPath from '../../resources/icon.png?asset';
import trayIconPath from '../../resources/tray.png?asset';
import { startPtydeck } from './app';
import { loadConfig } from './config';
import { desktopFlags, reportStartupError, runDesktopApp, type ElectronApi } from './electron-main';
import { findRunningServer } from './running-server';

const electron = { app, BrowserWindow, ipcMain, Notification, Tray, Menu, nativeImage, dialog, shell } as unknown as ElectronApi;
// `electron <app> --port N` in development; the packaged app has no app path in its arguments.
const flags = desktopFlags(process.argv.slice(app.isPackaged ? 1 : 2));

runDesktopApp(electron, {
  loadConfig: (f) => loadConfig(f),
  startPtydeck,
  findRunningServer,
  flags,
  preloadPath: join(__dirname, '../preload/index.js'),
  iconPath,
  trayIconPath,
}).catch((err: unknown) => {
  // After whenReady, so that the dialog can show.
  void app.whenReady().then(() => reportStartupError(electron, err));
});
