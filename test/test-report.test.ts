import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { root } from '../scripts/build.mjs';
import { failures } from '../scripts/test-report.mjs';

/**
 * `npm test`'s summary names the failed tests from each runner's JSON report (scripts/test-report.mjs):
 * here both runners really run a fixture with one passing and one failing test, and the summary must name
 * the failing one, with its reason, and only it.
 */
let dir: string;
beforeAll(() => {
  // Inside the checkout (test/tmp/ is ignored by git and by every run) so that the fixtures resolve
  // vitest and @playwright/test from node_modules.
  mkdirSync(join(root, 'test/tmp'), { recursive: true });
  dir = mkdtempSync(join(root, 'test/tmp/report-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Playwright's transform cache would otherwise outlive the run in the temporary directory.
const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8', env: { ...process.env, PLAYWRIGHT_TRANSFORM_CACHE_DIR: join(dir, 'transform-cache'), ...env, CI: '1' }, timeout: 60_000 });

/** A runner's config and a sample file with one passing test and one failing test named `failing`. */
function fixture(runner: 'vitest' | '@playwright/test', config: { name: string; text: string }, sample: string, failing: string, fruit: string): void {
  writeFileSync(join(dir, config.name), config.text);
  writeFileSync(
    join(dir, sample),
    `import { expect, test } from '${runner}';\ntest('adds up', () => expect(1 + 1).toBe(2));\ntest('${failing}', () => expect('two ${fruit}').toBe('three ${fruit}'));\n`,
  );
}

test('a failed vitest test is named with its file and the first lines of its error', () => {
  fixture('vitest', { name: 'vitest.config.mjs', text: "export default { test: { include: ['*.check.mjs'], globalSetup: [] } };\n" }, 'sample.check.mjs', 'counts apples', 'apples');
  const file = join(dir, 'vitest.json');
  const r = run([join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--root', dir, '--config', join(dir, 'vitest.config.mjs'), '--reporter=json', `--outputFile.json=${file}`]);
  expect(r.status).toBe(1);
  const found = failures({ file, kind: 'vitest' }, root);
  expect(found).toHaveLength(1);
  expect(found[0].name).toMatch(/sample\.check\.mjs > counts apples$/);
  expect(found[0].name).not.toContain(root);
  expect(found[0].why.join('\n')).toContain("expected 'two apples' to be 'three apples'");
});

test('a failed Playwright test is named with its file, line and title', () => {
  fixture('@playwright/test', { name: 'playwright.config.mjs', text: "export default { testDir: '.', testMatch: '*.pw.mjs', reporter: [['list']] };\n" }, 'sample.pw.mjs', 'counts pears', 'pears');
  const file = join(dir, 'playwright.json');
  const r = run([join(root, 'node_modules/@playwright/test/cli.js'), 'test', '--config', join(dir, 'playwright.config.mjs'), '--reporter=json'], { PLAYWRIGHT_JSON_OUTPUT_NAME: file });
  expect(r.status).toBe(1);
  const found = failures({ file, kind: 'playwright' }, root);
  expect(found).toHaveLength(1);
  expect(found[0].name).toMatch(/^test\/tmp\/report-[^/]+\/sample\.pw\.mjs:3 > counts pears$/);
  expect(found[0].why.join('\n')).toContain('three pears');
});

test('a missing report names nothing rather than failing the summary', () => {
  expect(failures({ file: join(dir, 'absent.json'), kind: 'vitest' }, root)).toEqual([]);
  expect(failures({ file: join(dir, 'absent.json'), kind: 'playwright' }, root)).toEqual([]);
});
