import { defineConfig } from '@playwright/test';
import { ensureRunMarker } from './test/leftovers';

// Every process this run starts inherits the run's marker (workers are started after this file loads);
// the global setup's teardown fails the run when one outlives it.
ensureRunMarker();

// The viewer runs in Debian's Chromium (Playwright cannot download browsers here) against a real server.
export default defineConfig({
  testDir: 'e2e',
  outputDir: 'test-results',
  globalSetup: './e2e/global-setup.ts',
  timeout: 60_000,
  workers: 1,
  reporter: [['list']],
  use: {
    browserName: 'chromium',
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: process.env.PTYDECK_CHROMIUM || '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    },
  },
});
