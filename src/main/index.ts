// The Electron entry: the only main-process file that imports electron. Everything else is in
// electron-main.ts (tested with a stand-in for this module) and the headless server it starts.
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeImage, Notification, shell, Tray } from 'electron';
import { join } from 'node:path';
import { startPtydeck } from './app';
import { loadConfig } from './config';
import { runDesktopApp } from './electron-main';
import { environmentWithSecretsTaken } from './secret-env';

runDesktopApp(
  { app, BrowserWindow, ipcMain, Notification, Tray, Menu, nativeImage, dialog, shell } as never,
  { loadConfig: () => loadConfig({}, environmentWithSecretsTaken()), startPtydeck, preloadPath: join(__dirname, '../preload/index.js') },
).catch((err: unknown) => {
  console.error('ptydeck: could not start:', err);
  app.exit(1);
});
