import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { startPtydeck } from '../src/main/app';
import { loadConfig } from '../src/main/config';
import { runDesktopApp, type ElectronApi, type RunningApp } from '../src/main/electron-main';

/**
 * The Electron wiring with a stand-in for the electron module (no Electron binary exists here);
 * the server, sessions and IPC answers behind it are real.
 */
class FakeApp extends EventEmitter {
  lockGranted = true;
  quitCalled = false;
  exitCode: number | null = null;
  requestSingleInstanceLock = () => this.lockGranted;
  quit = () => void (this.quitCalled = true);
  exit = (code = 0) => void (this.exitCode = code);
  whenReady = async () => undefined;
}

class FakeWindow extends EventEmitter {
  static last: FakeWindow | null = null;
  url = '';
  visible = true;
  webContents = Object.assign(new EventEmitter(), { id: 7, openHandler: null as null | ((d: { url: string }) => unknown), setWindowOpenHandler(h: (d: { url: string }) => unknown) { this.openHandler = h; } });
  constructor(readonly options: Record<string, any>) {
    super();
    FakeWindow.last = this;
  }
  loadURL(url: string) {
    this.url = url;
  }
  show() {
    this.visible = true;
  }
  hide() {
    this.visible = false;
  }
  focus() {}
  isMinimized() {
    return false;
  }
  restore() {}
}

function fakeElectron() {
  const ipc = new Map<string, (event: any, ...args: any[]) => void>();
  const shown: { title: string; body: string }[] = [];
  const dialogAnswers: number[] = [];
  const electron = {
    app: new FakeApp(),
    BrowserWindow: FakeWindow,
    ipcMain: { on: (ch: string, l: (event: any, ...args: any[]) => void) => ipc.set(ch, l) },
    Notification: class {
      static isSupported = () => true;
      constructor(private readonly o: { title: string; body: string }) {}
      show() {
        shown.push(this.o);
      }
    },
    dialog: { showMessageBoxSync: () => dialogAnswers.shift() ?? 0 },
  };
  return { electron, ipc, shown, dialogAnswers };
}

let home = '';
let running: RunningApp | null = null;
afterEach(async () => {
  await running?.ptydeck.stop();
  running = null;
  if (home) rmSync(home, { recursive: true, force: true });
});

async function launch(fake = fakeElectron()) {
  home = mkdtempSync(join(tmpdir(), 'ptydeck-electron-'));
  const deps = {
    loadConfig: () => loadConfig({ port: '0' }, { ...process.env, PTYDECK_TOKEN: '', PTYDECK_HOME: home }),
    startPtydeck,
    preloadPath: '/app/out/preload/index.js',
    log: () => undefined,
  };
  running = await runDesktopApp(fake.electron as unknown as ElectronApi, deps);
  return { fake, running: running!, win: FakeWindow.last! };
}

test('the window is sandboxed, loads the viewer from the local server, and the preload gets the credential over IPC', async () => {
  const { fake, running, win } = await launch();
  expect(win.options.webPreferences).toEqual({ preload: '/app/out/preload/index.js', contextIsolation: true, nodeIntegration: false, sandbox: true, webSecurity: true });
  expect(win.url).toBe(`${running.ptydeck.server.url}/`);
  expect(running.ptydeck.server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const ours = { sender: { id: 7 }, returnValue: undefined as unknown };
  fake.ipc.get('ptydeck:bootstrap')!(ours);
  expect(ours.returnValue).toEqual({ apiBase: running.ptydeck.server.url, token: running.ptydeck.tokens.adminToken });
  const stranger = { sender: { id: 99 }, returnValue: undefined as unknown };
  fake.ipc.get('ptydeck:bootstrap')!(stranger);
  expect(stranger.returnValue).toBeNull();
  // The runtime file for local agents is there, readable only by this user.
  expect(statSync(running.ptydeck.runtimeFile).mode & 0o777).toBe(0o600);
  expect(JSON.parse(readFileSync(running.ptydeck.runtimeFile, 'utf8')).url).toBe(running.ptydeck.server.url);
  // The API really answers with that credential.
  const r = await fetch(`${running.ptydeck.server.url}/api/sessions`, { headers: { Authorization: `Bearer ${running.ptydeck.tokens.adminToken}` } });
  expect(r.status).toBe(200);
});

test('only one instance runs: a second one quits at once', async () => {
  const fake = fakeElectron();
  fake.electron.app.lockGranted = false;
  const result = await runDesktopApp(fake.electron as unknown as ElectronApi, { loadConfig: () => { throw new Error('must not start a server'); }, startPtydeck, log: () => undefined });
  expect(result).toBeNull();
  expect(fake.electron.app.quitCalled).toBe(true);
});

test('closing the window keeps the sessions; quitting ends them after the person confirms', async () => {
  const { fake, running, win } = await launch();
  const { session } = await running.ptydeck.manager.create({ owner: 'agent-x', origin: 'test', cwd: '/tmp' });
  let prevented = false;
  win.emit('close', { preventDefault: () => (prevented = true) });
  expect(prevented).toBe(true);
  expect(win.visible).toBe(false);
  expect(session.isAlive).toBe(true);
  // Cancel in the quit dialog: nothing ends.
  fake.dialogAnswers.push(1);
  fake.electron.app.emit('before-quit', { preventDefault: () => undefined });
  await new Promise((r) => setTimeout(r, 50));
  expect(session.isAlive).toBe(true);
  expect(fake.electron.app.exitCode).toBeNull();
  // Confirm: every session ends and the app exits.
  fake.dialogAnswers.push(0);
  await running.quit();
  expect(session.closed).toBe(true);
  expect(running.ptydeck.manager.size).toBe(0);
  expect(fake.electron.app.exitCode).toBe(0);
});

test('the viewer can raise a desktop notification through IPC; other senders cannot', async () => {
  const { fake } = await launch();
  fake.ipc.get('ptydeck:notify')!({ sender: { id: 7 } }, { title: 'Command failed', body: 'make test exited with 2' });
  fake.ipc.get('ptydeck:notify')!({ sender: { id: 8 } }, { title: 'spoof', body: 'x' });
  expect(fake.shown).toEqual([{ title: 'Command failed', body: 'make test exited with 2' }]);
});

test('external links open in the browser and the window never navigates away', async () => {
  const { win, running } = await launch();
  expect(win.webContents.openHandler!({ url: 'https://example.com' })).toEqual({ action: 'deny' });
  let blocked = false;
  win.webContents.emit('will-navigate', { preventDefault: () => (blocked = true) }, 'https://evil.example/');
  expect(blocked).toBe(true);
  blocked = false;
  win.webContents.emit('will-navigate', { preventDefault: () => (blocked = true) }, `${running.ptydeck.server.url}/terminal?session_id=x`);
  expect(blocked).toBe(false);
});
