import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { startPtydeck, type Ptydeck } from '../src/main/app';
import { loadConfig, type Flags } from '../src/main/config';
import { desktopFlags, reportStartupError, runDesktopApp, type DesktopFlags, type ElectronApi, type MainDeps, type RunningApp } from '../src/main/electron-main';
import { findRunningServer } from '../src/main/running-server';
import { startTestServer, type TestServer } from './helpers';

/**
 * The Electron wiring with a stand-in for the electron module (no Electron binary exists here);
 * the server, sessions, IPC answers and the running-server lookup behind it are real.
 */
const root = join(__dirname, '..');

class FakeApp extends EventEmitter {
  lockGranted = true;
  quitCalled = false;
  exitCode: number | null = null;
  paths: Record<string, string> = {};
  calls: string[] = [];
  requestSingleInstanceLock = () => {
    this.calls.push('requestSingleInstanceLock');
    return this.lockGranted;
  };
  quit = () => void (this.quitCalled = true);
  exit = (code = 0) => void (this.exitCode = code);
  whenReady = async () => undefined;
  setPath = (name: string, path: string) => {
    this.calls.push(`setPath ${name}`);
    this.paths[name] = path;
  };
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

class FakeTray extends EventEmitter {
  static made: FakeTray[] = [];
  tooltip = '';
  menu: unknown = null;
  constructor(readonly image: unknown) {
    super();
    FakeTray.made.push(this);
  }
  setToolTip(t: string) {
    this.tooltip = t;
  }
  setContextMenu(m: unknown) {
    this.menu = m;
  }
}

/** A message box the test answers when it likes, as a person would: the app must not wait on it synchronously. */
function fakeElectron() {
  const ipc = new Map<string, (event: any, ...args: any[]) => void>();
  const shown: { title: string; body: string }[] = [];
  const questions: { parent: unknown; options: Record<string, any>; answer: (response: number) => void }[] = [];
  const errorBoxes: { title: string; content: string }[] = [];
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
    Tray: FakeTray,
    Menu: { buildFromTemplate: (t: unknown) => ({ template: t }) },
    nativeImage: { createFromPath: (path: string) => ({ fromPath: path }) },
    dialog: {
      showMessageBox: (parent: unknown, options: Record<string, any>) => new Promise<{ response: number }>((r) => questions.push({ parent, options, answer: (response) => r({ response }) })),
      showErrorBox: (title: string, content: string) => void errorBoxes.push({ title, content }),
    },
  };
  return { electron, ipc, shown, questions, errorBoxes };
}

let home = '';
let running: RunningApp | null = null;
const others: TestServer[] = [];
afterEach(async () => {
  await running?.ptydeck?.stop('end-everything');
  running = null;
  for (const s of others.splice(0)) await s.close();
  if (home) rmSync(home, { recursive: true, force: true });
  home = '';
});

const trayIconPath = join(root, 'resources/tray.png');

function deps(over: Partial<MainDeps> = {}, flags: DesktopFlags = { quitWithoutConfirm: false }): MainDeps {
  home ||= mkdtempSync(join(tmpdir(), 'ptydeck-electron-'));
  return {
    loadConfig: (f: Flags) => loadConfig({ port: '0', ...f }, { ...process.env, PTYDECK_TOKEN: '', AIO_SHELL_BACKEND: 'native', PTYDECK_HOME: home }),
    startPtydeck,
    findRunningServer,
    flags,
    preloadPath: '/app/out/preload/index.js',
    iconPath: join(root, 'resources/icon.png'),
    trayIconPath,
    log: () => undefined,
    ...over,
  };
}

async function launch(fake = fakeElectron(), d: MainDeps = deps()) {
  running = await runDesktopApp(fake.electron as unknown as ElectronApi, d);
  return { fake, running: running!, win: FakeWindow.last! };
}

const untilQuestion = async (fake: ReturnType<typeof fakeElectron>, n = 1) => {
  while (fake.questions.length < n) await new Promise((r) => setTimeout(r, 5));
};

test('the window is sandboxed, loads the viewer from the local server, and the preload gets the credential over IPC', async () => {
  const { fake, running, win } = await launch();
  const ptydeck = running.ptydeck!;
  expect(win.options.webPreferences).toEqual({ preload: '/app/out/preload/index.js', contextIsolation: true, nodeIntegration: false, sandbox: true, webSecurity: true });
  expect(win.options.icon).toBe(join(root, 'resources/icon.png'));
  expect(win.url).toBe(`${ptydeck.server.url}/`);
  expect(ptydeck.server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const ours = { sender: { id: 7 }, returnValue: undefined as unknown };
  fake.ipc.get('ptydeck:bootstrap')!(ours);
  expect(ours.returnValue).toEqual({ apiBase: ptydeck.server.url, token: ptydeck.tokens.adminToken });
  const stranger = { sender: { id: 99 }, returnValue: undefined as unknown };
  fake.ipc.get('ptydeck:bootstrap')!(stranger);
  expect(stranger.returnValue).toBeNull();
  // The runtime file for local agents is there, readable only by this user.
  expect(statSync(ptydeck.runtimeFile).mode & 0o777).toBe(0o600);
  expect(JSON.parse(readFileSync(ptydeck.runtimeFile, 'utf8')).url).toBe(ptydeck.server.url);
  // The API really answers with that credential.
  const r = await fetch(`${ptydeck.server.url}/api/sessions`, { headers: { Authorization: `Bearer ${ptydeck.tokens.adminToken}` } });
  expect(r.status).toBe(200);
});

test('only one instance runs: a second one quits at once', async () => {
  const fake = fakeElectron();
  fake.electron.app.lockGranted = false;
  const result = await runDesktopApp(fake.electron as unknown as ElectronApi, deps({ loadConfig: () => { throw new Error('must not start a server'); } }));
  expect(result).toBeNull();
  expect(fake.electron.app.quitCalled).toBe(true);
});

test('a second launch during the start is not lost: second-instance is handled before the server starts, and shows the window', async () => {
  const fake = fakeElectron();
  let listenersAtStart = -1;
  const d = deps();
  const { win } = await launch(fake, {
    ...d,
    startPtydeck: (config) => {
      listenersAtStart = fake.electron.app.listenerCount('second-instance');
      return startPtydeck(config);
    },
  });
  expect(listenersAtStart).toBe(1);
  win.emit('close', { preventDefault: () => undefined });
  expect(win.visible).toBe(false);
  fake.electron.app.emit('second-instance');
  expect(win.visible).toBe(true);
});

test('closing the window keeps the sessions; quitting asks without blocking, and the server keeps serving while it asks', async () => {
  const { fake, running, win } = await launch();
  const ptydeck = running.ptydeck!;
  const { session } = await ptydeck.manager.create({ owner: 'agent-x', origin: 'test', cwd: '/tmp' });
  let prevented = false;
  win.emit('close', { preventDefault: () => (prevented = true) });
  expect(prevented).toBe(true);
  expect(win.visible).toBe(false);
  expect(session.isAlive).toBe(true);

  // Cancel: nothing ends.
  fake.electron.app.emit('before-quit', { preventDefault: () => undefined });
  await untilQuestion(fake);
  expect(fake.questions[0].parent).toBe(win);
  expect(fake.questions[0].options.detail).toContain('1 terminal session will be ended');
  // The question is open, and the server and the terminal still answer (a synchronous box would stall them).
  const exec = await fetch(`${ptydeck.server.url}/v2/pty/sessions/${session.id}/exec`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ptydeck.tokens.adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ command: 'echo still-serving' }),
  });
  expect((await exec.json()).data.output).toBe('still-serving');
  // Asking to quit again while the box is open does not stack a second box.
  fake.electron.app.emit('before-quit', { preventDefault: () => undefined });
  await new Promise((r) => setTimeout(r, 20));
  expect(fake.questions.length).toBe(1);
  fake.questions[0].answer(1);
  await new Promise((r) => setTimeout(r, 20));
  expect(session.isAlive).toBe(true);
  expect(fake.electron.app.exitCode).toBeNull();

  // Confirm: every session ends and the app exits.
  const quitting = running.quit();
  await untilQuestion(fake, 2);
  fake.questions[1].answer(0);
  await quitting;
  expect(session.closed).toBe(true);
  expect(ptydeck.manager.size).toBe(0);
  expect(fake.electron.app.exitCode).toBe(0);
});

test('--quit-without-confirm quits without a question (for tests and scripts)', async () => {
  const { fake, running } = await launch(fakeElectron(), deps({}, { quitWithoutConfirm: true }));
  const { session } = await running.ptydeck!.manager.create({ owner: 'agent-x', origin: 'test', cwd: '/tmp' });
  await running.quit();
  expect(fake.questions).toEqual([]);
  expect(session.closed).toBe(true);
  expect(fake.electron.app.exitCode).toBe(0);
});

test('a shutdown that fails still quits, with exit code 1 and the reason in a dialog', async () => {
  const failing = async (config: Parameters<typeof startPtydeck>[0]): Promise<Ptydeck> => {
    const real = await startPtydeck(config);
    let failed = false;
    return {
      ...real,
      // Stops for real (nothing may outlive the test), then reports a failure, once.
      stop: async (mode) => {
        await real.stop(mode);
        if (failed) return;
        failed = true;
        throw new Error('a session would not die');
      },
    };
  };
  const { fake, running } = await launch(fakeElectron(), deps({ startPtydeck: failing }, { quitWithoutConfirm: true }));
  await running.quit();
  expect(fake.electron.app.exitCode).toBe(1);
  expect(fake.errorBoxes).toEqual([{ title: 'ptydeck did not stop cleanly', content: expect.stringContaining('a session would not die') }]);
});

test('a start that fails is shown in a dialog, not only on a console, and the app exits', () => {
  const fake = fakeElectron();
  reportStartupError(fake.electron as unknown as ElectronApi, new Error('PTYDECK_PORT must be an integer'), () => undefined);
  expect(fake.errorBoxes).toEqual([{ title: 'ptydeck could not start', content: 'PTYDECK_PORT must be an integer' }]);
  expect(fake.electron.app.exitCode).toBe(1);
});

test('the tray is kept for the life of the app and shows the real icon', async () => {
  FakeTray.made = [];
  const { running } = await launch();
  expect(FakeTray.made.length).toBe(1);
  expect(running.tray).toBe(FakeTray.made[0]);
  expect(FakeTray.made[0].image).toEqual({ fromPath: trayIconPath });
  expect(readFileSync(trayIconPath).subarray(1, 4).toString()).toBe('PNG');
});

test('the built Electron entry points at icons that exist', () => {
  const entry = join(root, 'out/main/index.js');
  if (!existsSync(entry)) expect.fail('not built: run `npm run build` first (npm test does)');
  const paths = [...readFileSync(entry, 'utf8').matchAll(/__dirname,\s*"([^"]+\.png)"/g)].map((m) => resolve(dirname(entry), m[1]));
  expect(paths.map((p) => p.slice(root.length + 1)).sort()).toEqual(['resources/icon.png', 'resources/tray.png']);
  for (const p of paths) expect(readFileSync(p).subarray(1, 4).toString()).toBe('PNG');
});

test('with a headless server already running on the same home, the window shows it instead of starting a second one', async () => {
  const headless = await startTestServer({ AIO_SHELL_BACKEND: 'native' });
  others.push(headless);
  const d = deps();
  const { fake, running, win } = await launch(fakeElectron(), {
    ...d,
    loadConfig: (f) => loadConfig({ port: '0', ...f }, { ...process.env, PTYDECK_TOKEN: '', PTYDECK_HOME: headless.home }),
  });
  expect(running.ptydeck).toBeNull();
  expect(win.url).toBe(`${headless.url}/`);
  const ours = { sender: { id: 7 }, returnValue: undefined as unknown };
  fake.ipc.get('ptydeck:bootstrap')!(ours);
  expect(ours.returnValue).toEqual({ apiBase: headless.url, token: headless.token });
  // Quitting the window asks nothing and stops nothing: the sessions are the headless server's.
  await running.quit();
  expect(fake.questions).toEqual([]);
  expect(fake.electron.app.exitCode).toBe(0);
  expect((await headless.api('GET', '/api/sessions')).status).toBe(200);
});

test('the app reads --port, --host, --quit-without-confirm and --user-data-dir among Chromium switches, and uses them', async () => {
  const flags = desktopFlags(['--port', '4321', '--no-sandbox', '--user-data-dir=/tmp/ptydeck-profile', '--quit-without-confirm', '--host', '127.0.0.2']);
  expect(flags).toEqual({ port: '4321', host: '127.0.0.2', quitWithoutConfirm: true, userDataDir: '/tmp/ptydeck-profile' });
  expect(desktopFlags([])).toEqual({ port: undefined, host: undefined, quitWithoutConfirm: false, userDataDir: undefined });

  let seen: Flags | null = null;
  const fake = fakeElectron();
  const d = deps({}, { port: '0', quitWithoutConfirm: false, userDataDir: '/tmp/ptydeck-profile' });
  await launch(fake, { ...d, loadConfig: (f) => ((seen = f), d.loadConfig(f)) });
  expect(seen).toMatchObject({ port: '0' });
  // The profile directory is set before the single-instance lock, which lives in it.
  expect(fake.electron.app.calls.slice(0, 2)).toEqual(['setPath userData', 'requestSingleInstanceLock']);
  expect(fake.electron.app.paths.userData).toBe('/tmp/ptydeck-profile');
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
  win.webContents.emit('will-navigate', { preventDefault: () => (blocked = true) }, `${running.server.url}/terminal?session_id=x`);
  expect(blocked).toBe(false);
});
