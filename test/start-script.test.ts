import { execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, onTestFinished, test } from 'vitest';
import { isStale, root } from '../scripts/build.mjs';
import { resolveElectronBinary } from '../scripts/electron-binary.mjs';
import { endHome } from './server-process';

/**
 * `npm start` as a newcomer runs it. No Electron binary exists on these machines, so the binary and its
 * installer are stand-ins (shell and Node scripts that record how they were called); the start script,
 * npm, the build check and the headless fallback are real.
 */
const dirs: string[] = [];
const tmp = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) endHome(d);
});

/** An executable that writes its arguments and DISPLAY to `record`, then exits as `mode` says. */
function standInElectron(dir: string, record: string, mode: 'exit0' | 'killed' = 'exit0'): string {
  const path = join(dir, 'electron');
  const end = mode === 'killed' ? 'kill -TERM $$' : 'exit 0';
  writeFileSync(path, `#!/bin/sh\n{ for a in "$@"; do printf '%s\\n' "$a"; done; echo "DISPLAY=$DISPLAY"; } > '${record}'\n${end}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** An electron package whose install.js prints progress and installs the stand-in binary, or fails. */
function standInPackage(binary: string, installer: 'works' | 'fails'): string {
  const pkg = tmp('ptydeck-electron-pkg-');
  const body =
    installer === 'fails'
      ? `console.log('stand-in installer: downloading'); console.error('stand-in installer: no network'); process.exit(1);`
      : `const fs = require('fs'), path = require('path');
         console.log('stand-in installer: downloading electron 100%');
         fs.mkdirSync(path.join(__dirname, 'dist'), { recursive: true });
         fs.copyFileSync(${JSON.stringify(binary)}, path.join(__dirname, 'dist', 'electron'));
         fs.chmodSync(path.join(__dirname, 'dist', 'electron'), 0o755);
         fs.writeFileSync(path.join(__dirname, 'path.txt'), 'electron');`;
  writeFileSync(join(pkg, 'install.js'), body);
  return pkg;
}

function npmStart(args: string[], env: Record<string, string | undefined>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const e = { ...process.env, ...env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete e[k];
    execFile('npm', ['start', '--', ...args], { cwd: root, env: e, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const asRoot = process.getuid?.() === 0;
const expectedArgs = (...args: string[]) => [root, ...args, ...(asRoot ? ['--no-sandbox'] : []), 'DISPLAY=:93'];

function needBuild(): void {
  if (isStale()) expect.fail('out/ is older than the sources: run `npm run build` first (npm test does)');
}

test("the binary is resolved the way Electron's index.js does it, ELECTRON_OVERRIDE_DIST_PATH first", () => {
  const pkg = tmp('ptydeck-electron-pkg-');
  expect(resolveElectronBinary(pkg, {})).toMatchObject({ found: false, installable: true });
  writeFileSync(join(pkg, 'path.txt'), 'electron');
  expect(resolveElectronBinary(pkg, {})).toMatchObject({ found: false, installable: true, why: expect.stringContaining(join(pkg, 'dist', 'electron')) });
  const dist = tmp('ptydeck-electron-dist-');
  expect(resolveElectronBinary(pkg, { ELECTRON_OVERRIDE_DIST_PATH: dist })).toMatchObject({ found: false, installable: false });
  standInElectron(dist, join(dist, 'record'));
  expect(resolveElectronBinary(pkg, { ELECTRON_OVERRIDE_DIST_PATH: dist })).toEqual({ found: true, path: join(dist, 'electron') });
});

test('`npm start -- --port N` launches Electron (ELECTRON_OVERRIDE_DIST_PATH) with the app, the flags and the display', async () => {
  needBuild();
  const dist = tmp('ptydeck-electron-dist-');
  const record = join(dist, 'record');
  standInElectron(dist, record);
  const r = await npmStart(['--port', '4321'], { ELECTRON_OVERRIDE_DIST_PATH: dist, DISPLAY: ':93', WAYLAND_DISPLAY: undefined });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  expect(readFileSync(record, 'utf8').trim().split('\n')).toEqual(expectedArgs('--port', '4321'));
  // Nothing was built (the build is current), and nothing said so.
  expect(r.stderr).toBe('');
}, 90_000);

test('Electron killed by a signal makes `npm start` fail and say so', async () => {
  needBuild();
  const dist = tmp('ptydeck-electron-dist-');
  standInElectron(dist, join(dist, 'record'), 'killed');
  const r = await npmStart([], { ELECTRON_OVERRIDE_DIST_PATH: dist, DISPLAY: ':93' });
  expect(r.code).not.toBe(0);
  expect(r.stdout).toContain('ptydeck: Electron was killed by SIGTERM');
}, 90_000);

test("a missing binary is fetched by Electron's installer, with its output shown, and then the window opens", async () => {
  needBuild();
  const bin = tmp('ptydeck-electron-bin-');
  const record = join(bin, 'record');
  const pkg = standInPackage(standInElectron(bin, record), 'works');
  const r = await npmStart(['--port', '4321'], { PTYDECK_ELECTRON_PACKAGE: pkg, ELECTRON_OVERRIDE_DIST_PATH: undefined, DISPLAY: ':93' });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  expect(r.stdout).toContain("is missing); fetching it with Electron's own installer");
  expect(r.stdout).toContain('stand-in installer: downloading electron 100%');
  expect(readFileSync(record, 'utf8').trim().split('\n')).toEqual(expectedArgs('--port', '4321'));
}, 90_000);

/** Runs `npm start` until the headless server prints its viewer URL, then stops it (its whole group). */
async function npmStartHeadless(env: Record<string, string | undefined>): Promise<{ out: string; code: number | null; signal: string | null }> {
  const home = tmp('ptydeck-start-home-');
  const e: NodeJS.ProcessEnv = { ...process.env, ...env, PTYDECK_HOME: home, PTYDECK_TOKEN: '' };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete e[k];
  const child = spawn('npm', ['start', '--', '--port', '0'], { cwd: root, env: e, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  // Its own process group: npm, the start script and the server it falls back to end together, even
  // when the test fails before it stops them.
  onTestFinished(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const served = await Promise.race([
    new Promise<boolean>((r) => {
      const look = () => (out.includes('open the viewer: http://127.0.0.1:') ? r(true) : setTimeout(look, 50));
      look();
    }),
    exited.then(() => false),
  ]);
  try {
    expect(served, out).toBe(true);
    expect(existsSync(join(home, 'runtime.json'))).toBe(true);
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // the group is gone already
    }
  }
  return { out, ...(await exited) };
}

test('when the installer fails, `npm start` serves headless and says why and what would fix it', async () => {
  needBuild();
  const bin = tmp('ptydeck-electron-bin-');
  const pkg = standInPackage(standInElectron(bin, join(bin, 'record')), 'fails');
  const { out } = await npmStartHeadless({ PTYDECK_ELECTRON_PACKAGE: pkg, ELECTRON_OVERRIDE_DIST_PATH: undefined, DISPLAY: ':93' });
  expect(out).toContain('stand-in installer: no network');
  expect(out).toContain("the desktop window cannot open: Electron's installer failed (exit 1; its message is above)");
  expect(out).toContain('then run `npx install-electron` and `npm start` again');
  expect(out).toContain('serving the same viewer headless instead');
  expect(existsSync(join(bin, 'record'))).toBe(false);
}, 90_000);

test('without a display, `npm start` serves headless at once (no download) and says how to get the window', async () => {
  needBuild();
  const bin = tmp('ptydeck-electron-bin-');
  const pkg = standInPackage(standInElectron(bin, join(bin, 'record')), 'works');
  const { out } = await npmStartHeadless({ PTYDECK_ELECTRON_PACKAGE: pkg, ELECTRON_OVERRIDE_DIST_PATH: undefined, DISPLAY: undefined, WAYLAND_DISPLAY: undefined });
  expect(out).toContain('the desktop window cannot open: there is no display (DISPLAY and WAYLAND_DISPLAY are unset)');
  expect(out).toContain('run `npm start` from a terminal in your desktop session');
  expect(out).not.toContain('stand-in installer');
  expect(existsSync(join(pkg, 'path.txt'))).toBe(false);
}, 90_000);
