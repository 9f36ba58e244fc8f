import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Playwright's e2e/*.spec.ts and the benchmarks are not vitest's.
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30000,
    hookTimeout: 30000,
    // Real shells through real PTYs: two cores, so keep parallelism modest.
    maxWorkers: 2,
    pool: 'forks',
  },
});
