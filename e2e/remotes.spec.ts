import { WebSocket } from 'ws';
import { startCliServer, type CliServer } from './fixtures';
import { agentExec, agentScreen, agentSession, BACKEND, expect, expectTerminalToShow, floorButton, openViewer, panel, screenshot, SLOW, tab, test } from './viewer-helpers';

/**
 * One deck, many machines, in Chromium: `srv` is the person's deck; `box` is a second `ptydeck serve`
 * (its own home and port) where an agent works. The person adds box in the viewer's Remotes dialog,
 * then watches, types into and takes over the agent's terminal there from the deck.
 */
const withRemote = test.extend<{ box: CliServer }>({
  box: async ({}, use) => {
    const box = await startCliServer({ AIO_SHELL_BACKEND: BACKEND });
    await use(box);
    await box.stop();
  },
});

withRemote("a remote agent's terminal shows under the remote's name; typing and take over from the deck act on the remote", async ({ page, srv, box }) => {
  await openViewer(page, srv);
  await page.getByTestId('remotes-button').click();
  const dialog = page.getByTestId('remotes-dialog');
  await expect(dialog.getByText('No remotes yet')).toBeVisible();
  const form = dialog.getByTestId('add-remote');
  await form.getByLabel('Name').fill('box');
  await form.getByLabel('URL').fill(box.url);
  await form.getByLabel('Its person (admin) token').fill(box.token);
  await form.getByRole('button', { name: 'Add remote' }).click();
  const row = dialog.getByTestId('remote-row');
  await expect(row).toHaveAttribute('data-state', 'online', SLOW);
  await expect(row).toContainText(`token …${box.token.slice(-4)}`);
  await expect(dialog).not.toContainText(box.token);
  await screenshot(page, 'remotes-dialog');
  await dialog.getByRole('button', { name: 'Close' }).click();

  const id = await agentSession(box, { id: 'build', cwd: '/tmp' });
  await agentExec(box, id, 'echo remote-says-$((6*7))');
  const group = page.locator('[data-testid="host-group"][data-host="box"]');
  await expect(group).toHaveAttribute('data-state', 'online', SLOW);
  await expect(group.locator('[data-testid="owner-group"][data-owner="agent"]').getByRole('tab', { name: 'build' })).toBeVisible(SLOW);

  await tab(page, 'box/build').click();
  await expect(panel(page).getByTestId('host-tag')).toHaveText('box');
  await expectTerminalToShow(page, 'box/build', 'remote-says-42');

  await floorButton(page, 'Type').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'type', SLOW);
  await page.getByTestId('terminal').click();
  await page.keyboard.type('echo deck-typed-$((2+3))');
  await page.keyboard.press('Enter');
  await expect.poll(() => agentScreen(box, id), SLOW).toBe('deck-typed-5');

  await floorButton(page, 'Take over').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-controller', 'person', SLOW);
  const refused = await agentExec(box, id, 'echo agent-blocked');
  expect(refused.status).toBe(423);
  expect(refused.body.message).toMatch(/A person has taken control/);
  await screenshot(page, 'remote-taken-over');
  await floorButton(page, 'Release').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-controller', 'agent', SLOW);
  expect((await agentExec(box, id, 'echo agent-back')).status).toBe(200);

  // The timeline beside the tab is the remote's own: the agent's commands there, and the person's keys.
  const timeline = panel(page).getByTestId('timeline-panel');
  const started = timeline.getByTestId('timeline-event').and(page.locator('[data-kind="command-started"]'));
  await expect(started.and(page.locator('[data-who="agent"]')).filter({ hasText: 'echo agent-back' })).toBeVisible(SLOW);
  await expect(started.and(page.locator('[data-who="person"]'))).toContainText('echo deck-typed', SLOW);
});

withRemote('a remote that rejects the token, or is down, says so on its group with the reason', async ({ page, srv, box }) => {
  expect((await srv.api('POST', '/api/remotes', { name: 'box', url: box.url, token: box.token })).status).toBe(201);
  expect((await srv.api('POST', '/api/remotes', { name: 'wrongkey', url: box.url, token: 'pdk_not_it' })).status).toBe(201);
  await agentSession(box, { id: 'kept', cwd: '/tmp' });
  await openViewer(page, srv);
  const bad = page.locator('[data-testid="host-group"][data-host="wrongkey"]');
  await expect(bad).toHaveAttribute('data-state', 'unauthorized', SLOW);
  await expect(bad.getByTestId('host-reason')).toContainText('rejected the token (401)');
  await expect(page.getByTestId('remotes-button')).toContainText('1 down');

  // box goes away: its group says so, its tab stays.
  await expect(tab(page, 'box/kept')).toBeVisible(SLOW);
  await box.stop();
  const down = page.locator('[data-testid="host-group"][data-host="box"]');
  await expect(down).toHaveAttribute('data-state', 'offline', SLOW);
  await expect(down.getByTestId('host-reason')).toContainText(/shut down|refused|dropped/);
  await expect(tab(page, 'box/kept')).toBeVisible();
  await screenshot(page, 'remote-down');
});

withRemote("an aio remote's terminal held by an agent is watched by polling, and the tab says so", async ({ page, srv, box }) => {
  expect((await srv.api('POST', '/api/remotes', { name: 'sandbox', url: box.url, token: box.token, kind: 'aio' })).status).toBe(201);
  const id = await agentSession(box, { id: 'held', cwd: '/tmp' });
  const agentSocket = new WebSocket(`${box.url.replace('http', 'ws')}/v2/pty/sessions/${id}/ws`, { headers: { Authorization: `Bearer ${box.agentToken}` } });
  await new Promise((resolve, reject) => {
    agentSocket.once('open', resolve);
    agentSocket.once('error', reject);
  });
  try {
    await openViewer(page, srv);
    await tab(page, 'sandbox/held').click();
    await expect(page.getByTestId('aio-note')).toHaveAttribute('data-watch', 'polling', SLOW);
    await expect(tab(page, 'sandbox/held').getByTestId('tab-polling')).toBeVisible();
    await expect(floorButton(page, 'Watch')).toBeVisible();
    await expect(panel(page).getByRole('button', { name: 'Take over', exact: true })).toHaveCount(0);
    agentSocket.send(JSON.stringify({ type: 'input', data: 'echo agent-on-aio-$((4*4))\n' }));
    await expectTerminalToShow(page, 'sandbox/held', 'agent-on-aio-16');
    await screenshot(page, 'aio-polling');
    expect(agentSocket.readyState).toBe(WebSocket.OPEN);
  } finally {
    agentSocket.close();
  }
});
