import type { Page } from '@playwright/test';
import { agentExec, agentSession, expect, openViewer, screenshot, SLOW, tab, test } from './viewer-helpers';

/**
 * A link printed in a terminal is the agent's words, not the person's: clicking it asks first and shows
 * where it really goes (an OSC 8 hyperlink's text may say anything). Nothing opens without a yes.
 */

const rows = (page: Page) => page.locator('[data-testid="terminal"] .xterm-rows');

/** Records window.open instead of opening anything (no network in tests). */
async function recordOpens(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const opened: string[] = [];
    (window as unknown as { __opened: string[] }).__opened = opened;
    window.open = ((url?: string | URL) => {
      opened.push(String(url ?? ''));
      return null;
    }) as typeof window.open;
  });
}
/**
 * Clicks on `part` inside a row's text the way a person does: xterm's screen layer receives the mouse, so
 * the click goes to coordinates (a monospace cell grid) rather than to the row's element.
 */
async function clickOn(page: Page, row: ReturnType<Page['locator']>, part: string): Promise<void> {
  const text = (await row.textContent()) ?? '';
  const box = (await row.boundingBox())!;
  const cell = box.width / text.length;
  const at = text.indexOf(part) + Math.min(4, part.length - 1);
  // xterm finds a link on mouse movement: come from elsewhere, as a hand does.
  await page.mouse.move(box.x, box.y + box.height * 3);
  await page.mouse.move(box.x + (at + 0.5) * cell, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.up();
}

const opened = (page: Page): Promise<string[]> => page.evaluate(() => (window as unknown as { __opened: string[] }).__opened);

test('clicking a plain URL asks first, showing the target; Cancel opens nothing, Open opens exactly it', async ({ page, srv }) => {
  await recordOpens(page);
  const id = await agentSession(srv);
  await agentExec(srv, id, 'echo see https://example.invalid/docs?q=1 now');
  await openViewer(page, srv, { renderer: 'dom' });
  await tab(page, id).click();
  const link = rows(page).getByText('https://example.invalid/docs?q=1', { exact: false }).last();
  await expect(link).toBeVisible(SLOW);
  await clickOn(page, link, 'https://example.invalid');
  const dialog = page.getByRole('dialog', { name: 'Open a link from the terminal?' });
  await expect(dialog).toBeVisible(SLOW);
  await expect(dialog.getByTestId('link-target')).toHaveText('https://example.invalid/docs?q=1');
  await expect(dialog.getByTestId('link-host')).toHaveText('example.invalid');
  await screenshot(page, 'link-confirm');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toHaveCount(0);
  expect(await opened(page)).toEqual([]);
  await clickOn(page, link, 'https://example.invalid');
  await page.getByRole('dialog', { name: 'Open a link from the terminal?' }).getByRole('button', { name: 'Open link' }).click();
  await expect.poll(() => opened(page)).toEqual(['https://example.invalid/docs?q=1']);
});

test('an OSC 8 hyperlink shows its real target, not its text', async ({ page, srv }) => {
  await recordOpens(page);
  const id = await agentSession(srv);
  await openViewer(page, srv, { renderer: 'dom' });
  await tab(page, id).click();
  // Printed while the viewer watches: a snapshot (serialized screen) does not carry OSC 8 targets.
  await expect(rows(page)).toContainText('/tmp', SLOW);
  await agentExec(srv, id, "printf '\\033]8;;https://evil.invalid/steal\\033\\\\https://docs.example/safe\\033]8;;\\033\\\\\\n'");
  const text = rows(page).getByText('https://docs.example/safe', { exact: true }).last();
  await expect(text).toBeVisible(SLOW);
  await clickOn(page, text, 'https://docs');
  const dialog = page.getByRole('dialog', { name: 'Open a link from the terminal?' });
  await expect(dialog).toBeVisible(SLOW);
  await expect(dialog.getByTestId('link-target')).toHaveText('https://evil.invalid/steal');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  expect(await opened(page)).toEqual([]);
});
