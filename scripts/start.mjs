#!/usr/bin/env node
// `npm start`: build, then open the desktop app. Where Electron cannot start (no binary, no display),
// say why and serve the same viewer headless instead, printing the URL to open.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const build = spawnSync(process.execPath, [join(root, 'node_modules/electron-vite/bin/electron-vite.js'), 'build'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

function electronBinary() {
  // Read electron's own record of its binary; require('electron') would try to download it.
  const pkg = join(root, 'node_modules/electron');
  const pathTxt = join(pkg, 'path.txt');
  if (!existsSync(pathTxt)) return { ok: false, why: 'the Electron binary is not installed (node_modules/electron has no path.txt)' };
  const bin = join(pkg, 'dist', readFileSync(pathTxt, 'utf8').trim());
  if (!existsSync(bin)) return { ok: false, why: `the Electron binary is missing (${bin})` };
  return { ok: true, bin };
}

function hasDisplay() {
  if (process.platform !== 'linux') return true;
  return Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);
}

const electron = electronBinary();
const why = !electron.ok ? electron.why : !hasDisplay() ? 'there is no display (DISPLAY and WAYLAND_DISPLAY are unset)' : null;
const args = process.argv.slice(2);
if (!why) {
  const child = spawn(electron.bin, [root, ...args], { stdio: 'inherit' });
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  console.log(`ptydeck: the desktop window cannot open here: ${why}.`);
  console.log('ptydeck: serving the same viewer headless instead; open the URL below in a browser.');
  const child = spawn(process.execPath, [join(root, 'bin/ptydeck.js'), 'serve', ...args], { stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code) => process.exit(code ?? 0));
}
