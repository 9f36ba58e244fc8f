#!/usr/bin/env node
// `npm test`: type-check, build, then the unit and integration tests (vitest) and the browser tests
// (Playwright). Every step runs even when an earlier one failed (one failure must not hide the others'
// results), except that nothing can be tested without a build; the run fails if any step failed.
//
// The whole run carries one marker in its environment (test/leftovers.ts): each runner's global teardown
// fails it when a process it started is still alive at the end.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './build.mjs';
import { failures } from './test-report.mjs';

// The same name as RUN_MARKER in test/leftovers.ts.
process.env.PD_TEST_RUN_ID ||= `${Date.now().toString(36)}-${randomBytes(8).toString('hex')}`;

const bin = (rel) => join(root, 'node_modules', rel);
// Each runner also writes a JSON report, so that the summary (the end of the output, which is all a CI log
// may keep) can name the tests that failed and say why.
const reports = mkdtempSync(join(tmpdir(), 'ptydeck-test-reports-'));
const vitestReport = (name) => {
  const file = join(reports, `${name}.json`);
  return { file, kind: 'vitest', args: ['--reporter=default', '--reporter=json', `--outputFile.json=${file}`] };
};
const vitest = vitestReport('vitest');
const vitestMemory = vitestReport('vitest-memory');
const playwright = { file: join(reports, 'playwright.json'), kind: 'playwright' };
const steps = [
  { name: 'typecheck (main)', args: [bin('typescript/bin/tsc'), '-p', 'tsconfig.node.json'] },
  { name: 'typecheck (viewer)', args: [bin('typescript/bin/tsc'), '-p', 'tsconfig.web.json'] },
  { name: 'build', args: [join(root, 'scripts/build.mjs')], required: true },
  // Everything but the tests that measure processes' memory, which then run alone (vitest.config.mts).
  { name: 'vitest', args: [bin('vitest/vitest.mjs'), 'run', ...vitest.args], env: { PTYDECK_TESTS_SHARED: '1' }, report: vitest },
  { name: 'vitest (memory, alone)', args: [bin('vitest/vitest.mjs'), 'run', 'test/memory-rss.test.ts', ...vitestMemory.args], report: vitestMemory },
  {
    name: 'playwright',
    args: [bin('@playwright/test/cli.js'), 'test', '--reporter=list,json'],
    // Playwright's transform cache goes with the checkout's other caches, not into the temporary directory.
    env: { PLAYWRIGHT_JSON_OUTPUT_NAME: playwright.file, PLAYWRIGHT_TRANSFORM_CACHE_DIR: join(root, 'node_modules', '.cache', 'playwright-transform') },
    report: playwright,
  },
];

const results = [];
for (const step of steps) {
  console.log(`\n=== ${step.name}\n`);
  const r = spawnSync(process.execPath, step.args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...step.env } });
  const ok = r.status === 0;
  results.push({ name: step.name, ok, how: ok ? 'passed' : r.signal ? `killed by ${r.signal}` : `FAILED (exit ${r.status})` });
  if (!ok && step.required) {
    results.push(...steps.slice(steps.indexOf(step) + 1).map((s) => ({ name: s.name, ok: false, how: 'not run (no build)' })));
    break;
  }
}

console.log('\n=== npm test');
for (const r of results) {
  console.log(`  ${r.ok ? 'ok  ' : 'FAIL'}  ${r.name}: ${r.how}`);
  const step = steps.find((s) => s.name === r.name);
  if (r.ok || !step?.report) continue;
  for (const f of failures(step.report, root)) {
    console.log(`          ✗ ${f.name}`);
    for (const line of f.why) console.log(`              ${line}`);
  }
}
rmSync(reports, { recursive: true, force: true });
process.exit(results.every((r) => r.ok) ? 0 : 1);
