// The Electron entry: the only main-process file that imports electron. Everything else is in
// electron-main.ts (tested with a stand-in for this module) and the headless server it starts.
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeImage, Notification, safeStorage, shell, Tray } from 'electron';
import { join } from 'node:path';
import { startPtydeck } from './app';
import { loadConfig } from './config';
import { runDesktopApp } from './electron-main';
import { safeStorageSecretStore } from './secret-store';

runDesktopApp(
  { app, BrowserWindow, ipcMain, Notification, Tray, Menu, nativeImage, dialog, shell } as never,
  {
    loadConfig: () => loadConfig(),
    // Remote tokens go to the OS keychain (runDesktopApp starts the server once the app is ready, when
    // safeStorage can answer).
    startPtydeck: (config) => startPtydeck(config, { secretStore: safeStorageSecretStore(safeStorage) }),
    preloadPath: join(__dirname, '../preload/index.js'),
  },
).catch((err: unknown) => {
  console.error('ptydeck: could not start:', err);
  app.exit(1);
});
