import { defineConfig } from 'vitest/config';

// The suites that exercise a session's behaviour run on every backend: native PTYs, the PTY host, tmux sessions.
const everyBackend = [
  'test/aio-rest.test.ts',
  'test/aio-sse.test.ts',
  'test/aio-ws.test.ts',
  'test/execd.test.ts',
  'test/viewer-ws.test.ts',
  'test/agent-send.test.ts',
  'test/teardown.test.ts',
  'test/mcp.test.ts',
  'test/backpressure.test.ts',
  'test/timeline.test.ts',
  'test/approvals.test.ts',
  'test/pty-input.test.ts',
];

/**
 * Tests that measure the processes they start (RSS from /proc) against a bound: beside other suites'
 * floods their peaks rose by half (two full runs failed by a few MiB in 96 while the same test alone
 * stayed 30 MiB under), so `npm test` runs them after the rest, alone (PTYDECK_TESTS_SHARED marks the
 * shared run). A plain `vitest run` includes them.
 */
const alone = ['test/memory-rss.test.ts'];

const onTmuxToo = ['test/aio-rest.test.ts', 'test/aio-ws.test.ts', 'test/execd.test.ts', 'test/viewer-ws.test.ts', 'test/agent-send.test.ts', 'test/teardown.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30000,
    // Closing a test server ends every session it started, durable (tmux) ones too, each with its process tree.
    hookTimeout: 60000,
    // Real shells through real PTYs on two cores: keep parallelism modest.
    maxWorkers: 2,
    // Marks the run and fails it when a process it started outlives it (test/leftovers.ts).
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // The memory tests measure live bytes after a forced collection (global.gc).
    execArgv: ['--expose-gc'],
    projects: [
      {
        extends: true,
        // Playwright's e2e/*.spec.ts and the benchmarks are not vitest's.
        // test/tmp/ is for one's own scratch files (ignored by git): never part of a run.
        test: { name: 'native', include: ['src/**/*.test.ts', 'test/**/*.test.ts'], exclude: ['**/node_modules/**', 'test/tmp/**', ...(process.env.PTYDECK_TESTS_SHARED ? alone : [])], env: { PTYDECK_TEST_BACKEND: 'native' } },
      },
      { extends: true, test: { name: 'host', include: everyBackend, env: { PTYDECK_TEST_BACKEND: 'host' } } },
      // tmux is a choice now (the PTY host is the default durable backend): the suites of the doors and
      // of teardown run on it, not every feature's.
      { extends: true, test: { name: 'tmux', include: onTmuxToo, env: { PTYDECK_TEST_BACKEND: 'tmux' } } },
    ],
  },
});
