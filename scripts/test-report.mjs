// The failed tests named in a test runner's JSON report (vitest's `json` reporter, Playwright's), for
// `npm test`'s summary: a CI log may keep only the end of the output, and that end must say what failed.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const plain = (text) => String(text ?? '').replace(/\x1b\[[0-9;]*m/g, '');
const firstLines = (text, n = 3) => plain(text).split('\n').map((l) => l.trim()).filter(Boolean).slice(0, n).map((l) => (l.length > 200 ? `${l.slice(0, 200)}…` : l));

/** The failed tests in a runner's JSON report: where they are and the first lines of why. */
export function failures(report, root) {
  let json;
  try {
    json = JSON.parse(readFileSync(report.file, 'utf8'));
  } catch {
    return [];
  }
  const out = [];
  const fromRoot = (path) => (path.startsWith(root) ? relative(root, path) : path);
  if (report.kind === 'vitest') {
    for (const file of json.testResults ?? []) {
      const where = fromRoot(file.name);
      for (const t of file.assertionResults ?? []) {
        if (t.status === 'failed') out.push({ name: `${where} > ${t.fullName}`, why: firstLines(t.failureMessages?.[0]) });
      }
      // A file that failed to load or whose hooks failed has no failed test to name.
      if (file.status === 'failed' && !(file.assertionResults ?? []).some((t) => t.status === 'failed')) out.push({ name: where, why: firstLines(file.message) });
    }
  } else {
    const walk = (suite, path) => {
      for (const spec of suite.specs ?? []) {
        for (const t of spec.tests ?? []) {
          const last = t.results?.[t.results.length - 1];
          if (t.status === 'unexpected' || t.status === 'flaky') {
            out.push({ name: `${fromRoot(join(json.config?.rootDir ?? '', spec.file))}:${spec.line} > ${[...path, spec.title].join(' > ')}${t.status === 'flaky' ? ' (flaky: passed on retry)' : ''}`, why: firstLines(last?.error?.message) });
          }
        }
      }
      for (const child of suite.suites ?? []) walk(child, suite.title && !suite.title.endsWith('.ts') ? [...path, suite.title] : path);
    };
    for (const suite of json.suites ?? []) walk(suite, []);
    for (const e of json.errors ?? []) out.push({ name: 'outside any test', why: firstLines(e.message) });
  }
  return out;
}
