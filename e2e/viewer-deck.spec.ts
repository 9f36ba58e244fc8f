import type { Page } from '@playwright/test';
import { agentExec, agentSession, agentToken, expect, expectTerminalToShow, openViewer, panel, screenshot, SLOW, tab, test } from './viewer-helpers';

/**
 * The supervisor's deck in the browser: the overview of every terminal, the attention queue, acting on
 * all of an agent at once, and notifications in a browser tab.
 */

const summary = async (srv: { api: (m: string, p: string) => Promise<{ body: any }> }, id: string) => (await srv.api('GET', `/api/sessions/${id}`)).body;

test('the overview shows every terminal, live and grouped by agent, with state, title and idle time; a card opens its terminal', async ({ page, srv }) => {
  const claude = agentToken(srv, 'claude');
  const codex = agentToken(srv, 'codex');
  const ids: string[] = [];
  for (let i = 1; i <= 3; i++) ids.push(await agentSession(srv, { cwd: '/tmp', title: `claude job ${i}` }, claude));
  for (let i = 1; i <= 2; i++) ids.push(await agentSession(srv, { cwd: '/tmp', title: `codex job ${i}` }, codex));
  for (const [n, id] of ids.entries()) await agentExec(srv, id, `echo screen-of-card-${n + 1}`, n < 3 ? claude : codex);
  await page.setViewportSize({ width: 1400, height: 900 });
  await openViewer(page, srv);
  await page.getByTestId('overview-button').click();
  const cards = page.getByTestId('overview-card');
  await expect(cards).toHaveCount(5, SLOW);
  const groups = page.getByTestId('overview-group');
  expect(await groups.evaluateAll((els) => els.map((e) => e.getAttribute('data-owner')))).toEqual(['claude', 'codex']);
  await expect(groups.nth(0).getByTestId('overview-card')).toHaveCount(3);
  for (const [n, id] of ids.entries()) {
    const card = page.locator(`[data-testid="overview-card"][data-session-id="${id}"]`);
    await expect(card.getByTestId('glance')).toContainText(`screen-of-card-${n + 1}`, SLOW);
    await expect(card.getByTestId('card-title')).toHaveText(n < 3 ? `claude job ${n + 1}` : `codex job ${n - 2}`);
    await expect(card.getByTestId('status-badge')).toHaveText('at prompt');
    await expect(card.getByTestId('card-idle')).toContainText(/quiet|printing/);
  }
  // Live: new output reaches the glance without a click.
  await agentExec(srv, ids[4], 'echo later-output', codex);
  await expect(page.locator(`[data-testid="overview-card"][data-session-id="${ids[4]}"]`).getByTestId('glance')).toContainText('later-output', SLOW);
  await screenshot(page, 'overview-1400');
  await page.setViewportSize({ width: 900, height: 600 });
  await screenshot(page, 'overview-900');
  await page.locator(`[data-testid="overview-card"][data-session-id="${ids[1]}"]`).click();
  await expect(tab(page, ids[1])).toHaveAttribute('aria-selected', 'true');
  await expectTerminalToShow(page, ids[1], 'screen-of-card-2');
  await expect(page.getByTestId('overview')).toHaveCount(0);
});

test('the attention queue lists what needs the person, most urgent first; F8 moves from item to item; a question is answered there', async ({ page, srv }) => {
  const failing = await agentSession(srv, { cwd: '/tmp', title: 'the failing build' });
  const asking = await agentSession(srv, { cwd: '/tmp', title: 'the deploy' });
  const held = await agentSession(srv, { cwd: '/tmp', title: 'the held one' });
  await agentExec(srv, failing, 'sh -c "exit 2"');
  await srv.api('POST', `/api/sessions/${held}/takeover`);
  await page.setViewportSize({ width: 1400, height: 900 });
  await openViewer(page, srv);
  expect((await agentExec(srv, held, 'echo nope')).status).toBe(423);
  await srv.api('POST', `/v2/pty/sessions/${asking}/exec`, { command: 'read -p "Ship it? [y/N] " a; echo "shipped=$a"', async: true }, srv.agentToken);
  const queue = page.getByTestId('attention-panel');
  await expect(queue).toBeVisible(SLOW);
  const items = queue.getByTestId('attention-item');
  await expect(items).toHaveCount(3, SLOW);
  expect(await items.evaluateAll((els) => els.map((e) => `${e.getAttribute('data-kind')}:${e.getAttribute('data-session-id')}`))).toEqual([`waiting:${asking}`, `failed:${failing}`, `refused:${held}`]);
  await expect(items.nth(0)).toContainText('Ship it? [y/N]');
  await expect(items.nth(1)).toContainText('sh -c "exit 2" failed (exit 2)');
  await expect(items.nth(2)).toContainText('agent tried to run a command 1×, refused');
  await expect(page.getByTestId('attention-count')).toHaveText('3');
  await screenshot(page, 'attention-queue');

  // F8 opens the most urgent one, then the next.
  await page.locator('body').press('F8');
  await expect(tab(page, asking)).toHaveAttribute('aria-selected', 'true');
  await page.locator('body').press('F8');
  await expect(tab(page, failing)).toHaveAttribute('aria-selected', 'true');
  await page.locator('body').press('Shift+F8');
  await expect(tab(page, asking)).toHaveAttribute('aria-selected', 'true');

  // Answer from the queue; the item goes.
  const answer = items.nth(0).getByRole('textbox');
  await answer.fill('y');
  await answer.press('Enter');
  await expect(queue.locator(`[data-kind="waiting"]`)).toHaveCount(0, SLOW);
  await expectTerminalToShow(page, asking, 'shipped=y');
  // A failed command can be put away.
  await queue.locator('[data-kind="failed"]').getByRole('button', { name: 'Dismiss' }).click();
  await expect(items).toHaveCount(1);
});

test('pause takes over every session of one agent (and the next it opens); resume hands them back; pause all and resume all', async ({ page, srv }) => {
  const claude = agentToken(srv, 'claude');
  const codex = agentToken(srv, 'codex');
  const c1 = await agentSession(srv, { cwd: '/tmp', title: 'claude one' }, claude);
  const c2 = await agentSession(srv, { cwd: '/tmp', title: 'claude two' }, claude);
  const x1 = await agentSession(srv, { cwd: '/tmp', title: 'codex one' }, codex);
  await openViewer(page, srv);
  await page.locator('[data-owner="claude"] .agent-menu > summary').click();
  await page.getByRole('button', { name: 'Pause claude' }).click();
  for (const id of [c1, c2]) await expect(tab(page, id)).toHaveAttribute('data-floor', 'takeover', SLOW);
  await expect(tab(page, x1)).toHaveAttribute('data-floor', 'watch');
  await expect(page.locator('[data-owner="claude"] .paused-tag')).toHaveText('paused');
  expect((await agentExec(srv, c1, 'echo nope', claude)).status).toBe(423);
  expect((await agentExec(srv, x1, 'echo fine', codex)).status).toBe(200);
  // A terminal claude opens while paused starts held.
  const c3 = await agentSession(srv, { cwd: '/tmp', title: 'claude three' }, claude);
  await expect(tab(page, c3)).toHaveAttribute('data-floor', 'takeover', SLOW);
  await tab(page, c1).click();
  await expect(panel(page).getByTestId('floor-reason')).toContainText('Paused by the person');
  await screenshot(page, 'paused-agent');

  await page.locator('[data-owner="claude"] .agent-menu > summary').click();
  await page.getByRole('button', { name: 'Resume claude' }).click();
  for (const id of [c1, c2, c3]) await expect(tab(page, id)).toHaveAttribute('data-floor', 'watch', SLOW);
  expect((await agentExec(srv, c1, 'echo back', claude)).body.data?.output).toBe('back');

  await page.getByTestId('pause-all').click();
  for (const id of [c1, c2, c3, x1]) await expect(tab(page, id)).toHaveAttribute('data-floor', 'takeover', SLOW);
  await expect(page.getByTestId('pause-all')).toContainText('Resume all');
  await page.getByTestId('pause-all').click();
  for (const id of [c1, c2, c3, x1]) await expect(tab(page, id)).toHaveAttribute('data-floor', 'watch', SLOW);
  expect((await summary(srv, x1)).floorReason).toBeNull();
});

test('interrupt all of an agent’s running commands at once (asked twice), and revoke its token from the viewer', async ({ page, srv }) => {
  const claude = agentToken(srv, 'claude');
  const a = await agentSession(srv, { cwd: '/tmp', title: 'sleeper a' }, claude);
  const b = await agentSession(srv, { cwd: '/tmp', title: 'sleeper b' }, claude);
  for (const id of [a, b]) await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'sleep 300', async: true }, claude);
  await openViewer(page, srv);
  await page.getByTestId('overview-button').click();
  const actions = page.locator('[data-testid="agent-actions"][data-agent="claude"]');
  const interrupt = actions.getByRole('button', { name: /Interrupt all/ });
  await expect(interrupt).toHaveText('Interrupt all (2)', SLOW);
  await interrupt.click();
  await expect(actions.getByRole('button', { name: 'Stop 2 commands?' })).toBeVisible();
  await actions.getByRole('button', { name: 'Stop 2 commands?' }).click();
  for (const id of [a, b]) await expect.poll(async () => (await summary(srv, id)).shellState, SLOW).toBe('prompt');

  await actions.getByRole('button', { name: 'Revoke token' }).click();
  await actions.getByRole('button', { name: "Revoke claude's token?" }).click();
  await expect(page.getByTestId('toast').filter({ hasText: "claude's token is revoked" })).toBeVisible(SLOW);
  expect((await srv.api('GET', '/api/sessions', undefined, claude)).status).toBe(401);
  await expect(actions.getByRole('button', { name: 'Revoke token' })).toHaveCount(0);
});

/** A browser's Notification API, recording the permission asked for and the notifications shown. */
async function fakeNotificationApi(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const log = { asked: 0, shown: [] as { title: string; body: string }[] };
    (window as unknown as { __notify: typeof log }).__notify = log;
    let permission: NotificationPermission = 'default';
    class FakeNotification {
      static get permission(): NotificationPermission {
        return permission;
      }
      static async requestPermission(): Promise<NotificationPermission> {
        log.asked++;
        permission = 'granted';
        return permission;
      }
      onclick: (() => void) | null = null;
      constructor(title: string, opts?: { body?: string }) {
        log.shown.push({ title, body: opts?.body ?? '' });
      }
      close(): void {}
    }
    (window as unknown as { Notification: unknown }).Notification = FakeNotification;
  });
}

test('in a browser the viewer asks for notification permission once, on a click, then notifies as the app does', async ({ page, srv }) => {
  await fakeNotificationApi(page);
  const id = await agentSession(srv);
  await openViewer(page, srv);
  const log = () => page.evaluate(() => (window as unknown as { __notify: { asked: number; shown: { title: string; body: string }[] } }).__notify);
  // Nothing is asked before the person acts.
  await expect(tab(page, id)).toBeVisible(SLOW);
  expect((await log()).asked).toBe(0);
  await page.getByTestId('notify-button').click();
  await expect(page.getByTestId('notify-button')).toHaveCount(0);
  expect((await log()).asked).toBe(1);
  await agentExec(srv, id, 'sh -c "exit 4"');
  await expect.poll(async () => (await log()).shown, SLOW).toEqual([expect.objectContaining({ title: 'Command failed (exit 4)' })]);
  await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'read -p "Name? " n', async: true }, srv.agentToken);
  await expect.poll(async () => (await log()).shown.map((n) => n.title), SLOW).toEqual(['Command failed (exit 4)', 'Waiting for input']);
  expect((await log()).shown[1].body).toContain('Name?');
  // Asked once: a reload does not offer it again.
  await page.reload();
  await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live', SLOW);
  await expect(page.getByTestId('notify-button')).toHaveCount(0);
  expect((await log()).asked).toBe(0);
});
