import { defineConfig } from 'vitest/config';

// The suites that exercise a session's behaviour run twice: on native PTYs and on tmux sessions.
const bothBackends = [
  'test/aio-rest.test.ts',
  'test/aio-ws.test.ts',
  'test/execd.test.ts',
  'test/viewer-ws.test.ts',
  'test/agent-send.test.ts',
  'test/teardown.test.ts',
  'test/mcp.test.ts',
  'test/backpressure.test.ts',
  'test/approvals.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30000,
    hookTimeout: 30000,
    // Real shells through real PTYs on two cores: keep parallelism modest.
    maxWorkers: 2,
    pool: 'forks',
    // The memory tests measure live bytes after a forced collection (global.gc).
    execArgv: ['--expose-gc'],
    projects: [
      {
        extends: true,
        // Playwright's e2e/*.spec.ts and the benchmarks are not vitest's.
        test: { name: 'native', include: ['src/**/*.test.ts', 'test/**/*.test.ts'], env: { PTYDECK_TEST_BACKEND: 'native' } },
      },
      { extends: true, test: { name: 'tmux', include: bothBackends, env: { PTYDECK_TEST_BACKEND: 'tmux' } } },
    ],
  },
});
