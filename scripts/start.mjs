#!/usr/bin/env node
// `npm start [-- --port N]`: build if the sources changed, then open the desktop app.
//
// Electron 45 has no install script: its binary is fetched by its own installer on first use. When the
// binary is missing, this runs that installer (its progress visible), then opens the window. It serves
// the same viewer headless instead only when there is no display or the installer fails, and then says
// which, and the command that would fix it.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureBuilt, root } from './build.mjs';
import { resolveElectronBinary } from './electron-binary.mjs';

const args = process.argv.slice(2);
// Where Electron's npm package is; the tests point this at a stand-in package (a stand-in installer).
const electronDir = process.env.PTYDECK_ELECTRON_PACKAGE || join(root, 'node_modules', 'electron');
const say = (line) => console.log(`ptydeck: ${line}`);

if (!ensureBuilt()) process.exit(1);

function displayProblem() {
  if (process.platform !== 'linux') return null;
  return process.env.DISPLAY || process.env.WAYLAND_DISPLAY ? null : 'there is no display (DISPLAY and WAYLAND_DISPLAY are unset)';
}

/** Electron 45 declares Node 22.12 or newer, and its installer loads ES modules with require(). */
function nodeHint() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12) ? '' : ` (Electron 45 and its installer declare Node 22.12 or newer; this is Node ${process.versions.node})`;
}

/** Runs `cmd`, passing our termination signals on, and exits as it does; a death by signal is a failure. */
function runToTheEnd(what, cmd, cmdArgs) {
  const child = spawn(cmd, cmdArgs, { stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('error', (err) => {
    say(`could not run ${what} (${cmd}): ${err.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      say(`${what} was killed by ${signal}`);
      process.exit(1);
    }
    if (code !== 0) say(`${what} exited with code ${code}`);
    process.exit(code ?? 1);
  });
}

function serveHeadless(why, fix) {
  say(`the desktop window cannot open: ${why}.`);
  if (fix) say(`to get the window: ${fix}`);
  say('serving the same viewer headless instead; open the URL printed below in a browser.');
  runToTheEnd('the headless server', process.execPath, [join(root, 'bin', 'ptydeck.js'), 'serve', ...args]);
}

function openWindow(binary) {
  // Chromium refuses to run as root with its sandbox on (containers, CI); the renderer stays sandboxed
  // by the app's own window settings.
  const extra = process.getuid?.() === 0 ? ['--no-sandbox'] : [];
  runToTheEnd('Electron', binary, [root, ...args, ...extra]);
}

function main() {
  let electron = resolveElectronBinary(electronDir);
  const noDisplay = displayProblem();
  if (noDisplay) {
    const also = !electron.found && electron.installable ? '; the first `npm start` with a display also fetches the Electron binary (or run `npx install-electron` now)' : '';
    return serveHeadless(noDisplay, `run \`npm start\` from a terminal in your desktop session${also}`);
  }
  if (!electron.found && !electron.installable) {
    return serveHeadless(electron.why, 'unset ELECTRON_OVERRIDE_DIST_PATH, or point it at a directory that holds the electron executable');
  }
  if (!electron.found) {
    say(`${electron.why}; fetching it with Electron's own installer (once, about 100 MB)...`);
    const installer = join(electronDir, 'install.js');
    const r = spawnSync(process.execPath, [installer], { stdio: 'inherit', cwd: root });
    if (r.status !== 0) {
      const how = r.error ? r.error.message : r.signal ? `killed by ${r.signal}` : `exit ${r.status}; its message is above`;
      return serveHeadless(
        `Electron's installer failed (${how})${nodeHint()}`,
        'fix what the installer reported (it downloads from github.com/electron/electron/releases; ELECTRON_MIRROR names another source), then run `npx install-electron` and `npm start` again',
      );
    }
    electron = resolveElectronBinary(electronDir);
    if (!electron.found) return serveHeadless(`Electron's installer finished, but ${electron.why}`, 'delete node_modules/electron, run `npm install`, then `npm start`');
    say('Electron installed.');
  }
  openWindow(electron.path);
}

main();
