// Where the Electron binary is, found the way Electron's own node_modules/electron/index.js finds it,
// but without its side effect: index.js downloads a missing binary on require(), and that must only
// happen when we decide to run the installer (with its progress visible), never from plain Node by accident.
//
// Electron's rule (index.js, electron 45):
//   1. path.txt, written by the installer, names the executable inside dist/ (e.g. "electron").
//   2. ELECTRON_OVERRIDE_DIST_PATH, when set, replaces dist/: the binary is <override>/<path.txt or "electron">.
//   3. Otherwise the binary is dist/<path.txt>; missing path.txt or a missing file means "not installed".
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * @param {string} electronDir  the electron npm package (node_modules/electron)
 * @param {NodeJS.ProcessEnv} env
 * @returns {{ found: true, path: string } | { found: false, why: string, installable: boolean }}
 */
export function resolveElectronBinary(electronDir, env = process.env) {
  const pathFile = join(electronDir, 'path.txt');
  const executable = existsSync(pathFile) ? readFileSync(pathFile, 'utf8') : null;
  const override = env.ELECTRON_OVERRIDE_DIST_PATH;
  if (override) {
    const path = join(override, executable || 'electron');
    if (existsSync(path)) return { found: true, path };
    // Electron itself would not download in this case either: the override is the person's choice.
    return { found: false, why: `ELECTRON_OVERRIDE_DIST_PATH is set, but ${path} does not exist`, installable: false };
  }
  if (!executable) return { found: false, why: `the Electron binary is not installed yet (${pathFile} is missing)`, installable: true };
  const path = join(electronDir, 'dist', executable);
  if (!existsSync(path)) return { found: false, why: `the Electron binary is missing (${path})`, installable: true };
  return { found: true, path };
}
