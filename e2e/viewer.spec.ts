import { expect, test } from '@playwright/test';
import { startCliServer, type CliServer } from './fixtures';

let srv: CliServer;
test.beforeAll(async () => {
  srv = await startCliServer();
});
test.afterAll(async () => {
  await srv.stop();
});

test('the printed viewer URL trades its token for an HttpOnly cookie and drops it from the address bar', async ({ page, context }) => {
  await page.goto(srv.viewerUrl);
  await expect(page).toHaveURL(/\/$/);
  expect(page.url()).not.toContain('token');
  const cookies = await context.cookies();
  const viewer = cookies.find((c) => c.name === 'ptydeck_viewer');
  expect(viewer?.httpOnly).toBe(true);
  expect(viewer?.sameSite).toBe('Strict');
  await expect(page.getByRole('heading', { name: 'ptydeck' })).toBeVisible();
  // The cookie is a credential for the API from this origin.
  const status = await page.evaluate(async () => (await fetch('/v2/pty/sessions')).status);
  expect(status).toBe(200);
});
