import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';
import { fingerprint, isStale, root } from '../scripts/build.mjs';

/** `npm run cli` from a checkout: it builds only when the sources changed, and then says nothing. */
const home = mkdtempSync(join(tmpdir(), 'ptydeck-cli-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

test('with the build current, `npm run cli -s -- token list` prints only the tokens and builds nothing', async () => {
  if (isStale()) expect.fail('out/ is older than the sources: run `npm run build` first (npm test does)');
  const built = statSync(join(root, 'out/main/cli.js')).mtimeMs;
  const run = (...args: string[]) => promisify(execFile)('npm', ['run', 'cli', '-s', '--', ...args], { cwd: root, env: { ...process.env, PTYDECK_HOME: home, PTYDECK_TOKEN: '' }, encoding: 'utf8' });
  const created = await run('token', 'create', '--name', 'quiet');
  expect(created.stderr).toBe('');
  expect(created.stdout).toMatch(/^pdk_\S+\n$/);
  const listed = await run('token', 'list');
  expect(listed.stderr).toBe('');
  expect(listed.stdout).toMatch(/^quiet\t\S+\n$/);
  expect(statSync(join(root, 'out/main/cli.js')).mtimeMs).toBe(built);
}, 90_000);

test('the build fingerprint changes when an input is edited, added or removed, and only then', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptydeck-fingerprint-'));
  try {
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src/a.ts'), 'one');
    writeFileSync(join(dir, 'package.json'), '{}');
    const inputs = ['src', 'package.json', 'missing.json'];
    const first = fingerprint(dir, inputs);
    expect(fingerprint(dir, inputs)).toBe(first);
    // Same size, new time: an edit.
    writeFileSync(join(dir, 'src/a.ts'), 'two');
    utimesSync(join(dir, 'src/a.ts'), new Date(), new Date(Date.now() + 5000));
    const edited = fingerprint(dir, inputs);
    expect(edited).not.toBe(first);
    writeFileSync(join(dir, 'src/b.ts'), '');
    const added = fingerprint(dir, inputs);
    expect(added).not.toBe(edited);
    rmSync(join(dir, 'src/b.ts'));
    expect(fingerprint(dir, inputs)).toBe(edited);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
