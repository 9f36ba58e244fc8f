import { _electron as electron, expect, test } from '@playwright/test';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveElectronBinary } from '../scripts/electron-binary.mjs';
import { endHome } from '../test/server-process';

/**
 * The desktop app end to end, in a real Electron. It needs the Electron binary and a display; where
 * either is missing (as on the CI machines, where no Electron binary can be installed) it skips and
 * says why. The same wiring is unit-tested with a stand-in in test/electron-main.test.ts.
 */
const root = join(__dirname, '..');
// Found the way Electron finds it (ELECTRON_OVERRIDE_DIST_PATH, then node_modules/electron/path.txt).
const binary = resolveElectronBinary(join(root, 'node_modules/electron'));
const display = process.platform !== 'linux' || Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);

test('the desktop window shows the viewer and an agent session appears in it', async () => {
  const why = !binary.found
    ? `no Electron binary (${binary.why}): the desktop app cannot launch on this machine; \`npx install-electron\` fetches it`
    : !display
      ? 'no display (DISPLAY/WAYLAND_DISPLAY unset): the desktop window cannot open'
      : null;
  if (why) console.warn(`electron e2e skipped: ${why}`);
  test.skip(why !== null, why ?? '');
  const home = mkdtempSync(join(tmpdir(), 'ptydeck-electron-e2e-'));
  const profile = mkdtempSync(join(tmpdir(), 'ptydeck-electron-profile-'));
  // Its own profile (and so its own single-instance lock), and a quit that asks nothing.
  const args = [root, `--user-data-dir=${profile}`, '--quit-without-confirm', ...(process.getuid?.() === 0 ? ['--no-sandbox'] : [])];
  const app = await electron.launch({ executablePath: binary.found ? binary.path : '', args, env: { ...process.env, PTYDECK_HOME: home, PTYDECK_PORT: '0', PTYDECK_TOKEN: '' } });
  try {
    const page = await app.firstWindow();
    await expect(page).toHaveTitle(/ptydeck/);
    const runtime = join(home, 'runtime.json');
    await expect.poll(() => existsSync(runtime)).toBe(true);
    const { url, token } = JSON.parse(readFileSync(runtime, 'utf8'));
    const created = await fetch(`${url}/v2/pty/sessions`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ id: 'from-agent', cwd: '/tmp' }) });
    expect(created.status).toBe(200);
    await expect(page.getByRole('tab', { name: /from-agent/ })).toBeVisible();
    // Context isolation: the page sees the bridge, not Node.
    expect(await page.evaluate(() => typeof (window as any).require)).toBe('undefined');
    expect(await page.evaluate(() => typeof (window as any).ptydeck?.apiBase)).toBe('string');
  } finally {
    await app.close();
    endHome(home);
    rmSync(profile, { recursive: true, force: true });
  }
});
