import type { Page } from '@playwright/test';
import {
  agentExec,
  agentScreen,
  agentSession,
  escapeRegExp,
  expect,
  expectTerminalToShow,
  floorButton,
  openViewer,
  panel,
  screenshot,
  serveAgain,
  SLOW,
  stopProcess,
  tab,
  terminalText,
  test,
} from './viewer-helpers';

/**
 * The defects of issue 16, each as a person meets it in the viewer: refused agents, tabs that cannot be
 * told apart, cropped screens, a resized agent terminal, a false or flapping "waiting", a question
 * not shown, a floor held by nobody, and the smaller ones.
 */

/** The Electron bridge's notifier, recording what it is asked to show. */
async function recordNotifications(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const notes: { title: string; body: string }[] = [];
    (window as unknown as { __notes: typeof notes }).__notes = notes;
    window.ptydeck = { apiBase: '', token: '', notify: (title: string, body: string) => notes.push({ title, body }) };
  });
}
const notes = (page: Page): Promise<{ title: string; body: string }[]> => page.evaluate(() => (window as unknown as { __notes: { title: string; body: string }[] }).__notes);

test('an agent refused while the person holds the floor shows on the strip and as a badge on the tab', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, '#');
  await floorButton(page, 'Take over').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'takeover', SLOW);
  await expect(page.getByTestId('refusal-note')).toHaveCount(0);
  expect((await agentExec(srv, id, 'echo blocked')).status).toBe(423);
  expect((await srv.api('POST', `/v2/pty/sessions/${id}/input`, { input: 'x' }, srv.agentToken)).status).toBe(423);
  expect((await agentExec(srv, id, 'echo blocked')).status).toBe(423);
  await expect(page.getByTestId('refusal-note')).toContainText('agent tried to run a command and type 3×, refused', SLOW);
  await expect(tab(page, id).getByTestId('refusal-badge')).toHaveText('3× refused');
  await screenshot(page, 'refused-agent');
  // A new takeover counts from zero; after release there is nothing to show.
  await floorButton(page, 'Release').click();
  await expect(page.getByTestId('refusal-note')).toHaveCount(0, SLOW);
  await expect(tab(page, id).getByTestId('refusal-badge')).toHaveCount(0);
});

test('tabs are told apart: a long title shows whole (ellipsis in the tab, tooltip, header), agent-chosen ids are not cut, and the person can rename', async ({ page, srv }) => {
  await page.setViewportSize({ width: 1400, height: 900 });
  const long = 'claude-refactor-session-module-3: extract the floor lease into a feature';
  const titled = await agentSession(srv, { cwd: '/tmp', title: long });
  const ids: string[] = [];
  for (let i = 1; i <= 6; i++) ids.push(await agentSession(srv, { cwd: '/tmp', id: `claude-refactor-session-module-${i}` }));
  await openViewer(page, srv);
  // Every tab reads differently: the whole name is there, and where it must be cut the cut is in the
  // middle, so the end that tells them apart stays in view.
  for (const id of ids) {
    await expect(tab(page, id).getByTestId('tab-title')).toHaveText(id);
    await expect(tab(page, id).locator('.me-tail')).toBeVisible();
    await expect(tab(page, id).locator('.me-tail')).toHaveText(id.slice(-10));
  }
  const tabTitle = tab(page, titled).getByTestId('tab-title');
  await expect(tabTitle).toHaveText(long);
  await expect(tab(page, titled)).toHaveAttribute('title', new RegExp(`^${escapeRegExp(long)}\\n`));
  // Too long for the sidebar: cut with an ellipsis, not clipped.
  const cut = await tabTitle.locator('.me-head').evaluate((el) => ({ overflow: el.scrollWidth > el.clientWidth, style: getComputedStyle(el).textOverflow }));
  expect(cut).toEqual({ overflow: true, style: 'ellipsis' });
  await tab(page, titled).click();
  const header = panel(page).getByTestId('session-title');
  await expect(header).toHaveText(long);
  // Not cut: it wraps in the header rather than being clipped.
  expect(await header.evaluate((el) => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight)).toBe(true);
  await screenshot(page, 'titles');

  // Renaming from the header (the owner or the person may).
  await panel(page).getByRole('button', { name: 'Rename this terminal' }).click();
  const field = panel(page).getByRole('textbox', { name: 'Terminal title' });
  await field.fill('deploy: staging');
  await field.press('Enter');
  await expect(tab(page, titled).getByTestId('tab-title')).toHaveText('deploy: staging', SLOW);
  expect((await srv.api('GET', `/api/sessions/${titled}`)).body).toMatchObject({ title: 'deploy: staging', titleSource: 'set' });
  // The agent renames it too; the tab follows.
  await srv.api('PATCH', `/api/sessions/${titled}`, { title: 'deploy: production' }, srv.agentToken);
  await expect(tab(page, titled).getByTestId('tab-title')).toHaveText('deploy: production', SLOW);
});

test('a watched 120x36 terminal is fully visible at 900x600: scaled to the pane, not cropped', async ({ page, srv }) => {
  const id = await agentSession(srv, { cwd: '/tmp', cols: 120, rows: 36 });
  // Fill every row and the last column, so a crop would hide something.
  await agentExec(srv, id, `for i in $(seq 1 40); do printf '%-119s|\\n' "row-$i"; done`);
  await page.setViewportSize({ width: 900, height: 600 });
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, 'row-40');
  const host = page.getByTestId('terminal');
  await expect(host).toHaveAttribute('data-cropped', 'false', SLOW);
  expect(await page.evaluate((sid) => window.__ptydeckTerminalSize?.(sid), id)).toEqual({ cols: 120, rows: 36 });
  // The whole screen lies inside the visible pane.
  await expect
    .poll(
      () =>
        page.evaluate(() => {
          const pane = document.querySelector('.terminal-scroll')!.getBoundingClientRect();
          const screen = document.querySelector('[data-testid="terminal"] .xterm-screen')!.getBoundingClientRect();
          return screen.left >= pane.left && screen.top >= pane.top && screen.right <= pane.right + 0.5 && screen.bottom <= pane.bottom + 0.5;
        }),
      SLOW,
    )
    .toBe(true);
  expect(Number(await host.getAttribute('data-font-size'))).toBeLessThan(13);
  await expect(page.getByTestId('cropped-note')).toHaveCount(0);
  await screenshot(page, 'watch-120x36-at-900x600');
  // At 1400x900 the same terminal is shown larger.
  await page.setViewportSize({ width: 1400, height: 900 });
  await expect.poll(async () => Number(await host.getAttribute('data-font-size')), SLOW).toBeGreaterThan(9);
  await screenshot(page, 'watch-120x36-at-1400x900');
});

test('a PTY too big for any readable font says it is cropped, and scrolls', async ({ page, srv }) => {
  const id = await agentSession(srv, { cwd: '/tmp', cols: 400, rows: 120 });
  await page.setViewportSize({ width: 900, height: 600 });
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, '#');
  await expect(page.getByTestId('cropped-note')).toContainText('400×120 does not fit', SLOW);
  await expect(page.getByTestId('terminal')).toHaveAttribute('data-cropped', 'true');
});

test('Type and Take over leave the agent its size; "Fit to my window" resizes it, and Release gives the agent its size back', async ({ page, srv }) => {
  const id = await agentSession(srv, { cwd: '/tmp', cols: 100, rows: 30 });
  const size = async () => {
    const s = (await srv.api('GET', `/api/sessions/${id}`)).body;
    return `${s.cols}x${s.rows}`;
  };
  await page.setViewportSize({ width: 900, height: 600 });
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, '#');
  await floorButton(page, 'Take over').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'takeover', SLOW);
  for (let i = 0; i < 2; i++) await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'true' });
  expect(await size()).toBe('100x30');
  await panel(page).getByRole('button', { name: 'Fit to my window' }).click();
  await expect.poll(size, SLOW).not.toBe('100x30');
  const fitted = await size();
  await expect(page.getByTestId('pty-size')).toHaveText(fitted.replace('x', '×'), SLOW);
  await floorButton(page, 'Release').click();
  await expect.poll(size, SLOW).toBe('100x30');
  await expect(page.getByTestId('pty-size')).toHaveText('100×30', SLOW);
  expect((await agentExec(srv, id, 'stty size')).body.data?.output).toBe('30 100');
});

test('top is running, not waiting: no "waiting" state, count or notification while it redraws', async ({ page, srv }) => {
  await recordNotifications(page);
  const id = await agentSession(srv, { cwd: '/tmp', cols: 100, rows: 30 });
  await openViewer(page, srv);
  await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'top -d 1', async: true }, srv.agentToken);
  await expect(tab(page, id)).toHaveAttribute('data-status', 'running', SLOW);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, 'load average');
  // Several of top's redraws, and past the monitor's longest hold; the tab never says "waiting".
  const seen = new Set<string>();
  const until = Date.now() + 7000;
  while (Date.now() < until) {
    seen.add((await tab(page, id).getAttribute('data-status')) ?? '');
    seen.add((await page.getByTestId('session-count').textContent()) ?? '');
    await page.waitForTimeout(150);
  }
  expect([...seen].filter((s) => s.includes('waiting'))).toEqual([]);
  expect(await notes(page)).toEqual([]);
  await expect(page).toHaveTitle('ptydeck');
  await screenshot(page, 'top-running');
  await srv.api('POST', `/v2/pty/sessions/${id}/input`, { input: 'q' });
});

test('a waiting tab shows the question it waits on; the answer box types the answer as the person; one notification', async ({ page, srv }) => {
  await recordNotifications(page);
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'read -p "Deploy to prod? [y/N] " answer; echo "answered $answer"', async: true }, srv.agentToken);
  await expect(tab(page, id)).toHaveAttribute('data-status', 'waiting', SLOW);
  await expect(tab(page, id).getByTestId('tab-prompt')).toHaveText('Deploy to prod? [y/N]');
  await tab(page, id).click();
  await expect(page.getByTestId('question-prompt')).toHaveText('Deploy to prod? [y/N]');
  await expect.poll(() => notes(page), SLOW).toEqual([expect.objectContaining({ title: 'Waiting for input', body: expect.stringContaining('Deploy to prod? [y/N]') })]);
  await screenshot(page, 'waiting-question');
  // The agent's tab is in Watch: the answer still goes in, as the person.
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'watch');
  const answer = page.getByTestId('question-bar').getByRole('textbox');
  await answer.fill('y');
  await answer.press('Enter');
  await expect.poll(() => agentScreen(srv, id), SLOW).toContain('answered y');
  await expect(tab(page, id)).not.toHaveAttribute('data-status', 'waiting', SLOW);
  await expect(page.getByTestId('question-bar')).toHaveCount(0);
  expect(await notes(page)).toHaveLength(1);
});

test.describe('the floor lease', () => {
  test.use({ serverEnv: { PTYDECK_FLOOR_LEASE_SECS: '2' } });

  test('after the person’s page closes, the floor returns to the agent, and both can see why', async ({ browser, srv }) => {
    const id = await agentSession(srv);
    const context = await browser.newContext();
    const page = await context.newPage();
    await openViewer(page, srv);
    await tab(page, id).click();
    await expectTerminalToShow(page, id, '#');
    await floorButton(page, 'Take over').click();
    await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'takeover', SLOW);
    // While the page is open the floor stays held, for longer than the lease.
    for (let i = 0; i < 3; i++) expect((await agentExec(srv, id, 'true')).status).toBe(423);
    await page.waitForTimeout(2500);
    expect((await srv.api('GET', `/api/sessions/${id}`)).body.floor).toBe('takeover');
    await context.close();
    await expect.poll(async () => (await srv.api('GET', `/api/sessions/${id}`, undefined, srv.agentToken)).body.floor, { timeout: 15_000 }).toBe('watch');
    const seen = (await srv.api('GET', `/api/sessions/${id}`, undefined, srv.agentToken)).body;
    expect(seen.floorReason).toMatch(/no viewer of the person was connected for 2 s/);
    expect((await agentExec(srv, id, 'echo agent-again')).body.data?.output).toBe('agent-again');
    // The person, back, reads it on the strip.
    const back = await browser.newPage();
    await openViewer(back, srv);
    await tab(back, id).click();
    await expect(back.getByTestId('floor-reason')).toContainText('floor lease', SLOW);
    await screenshot(back, 'lease-returned');
    await back.close();
  });
});

test('a shell that exits with an error is red; the armed Close says what it kills and stays red under the pointer', async ({ page, srv }) => {
  const ending = await agentSession(srv);
  const live = await agentSession(srv);
  await openViewer(page, srv);
  await srv.api('POST', `/v2/pty/sessions/${ending}/input`, { input: 'exit 3', press_enter: true });
  await expect(tab(page, ending)).toHaveAttribute('data-status', 'exited', SLOW);
  await tab(page, ending).click();
  const badge = panel(page).getByTestId('status-badge');
  await expect(badge).toHaveAttribute('data-bad', 'true');
  expect(await badge.evaluate((el) => getComputedStyle(el).color)).toBe('rgb(244, 112, 103)');

  await srv.api('POST', `/v2/pty/sessions/${live}/exec`, { command: 'sleep 300', async: true }, srv.agentToken);
  await tab(page, live).click();
  await expect(tab(page, live)).toHaveAttribute('data-status', 'running', SLOW);
  await panel(page).getByRole('button', { name: 'Close' }).click();
  const armed = panel(page).getByRole('button', { name: /Really close\?/ });
  await expect(armed).toHaveText('Really close? Kills sleep 300');
  await armed.hover();
  expect(await armed.evaluate((el) => getComputedStyle(el).backgroundColor)).toMatch(/^rgb\((18\d|19\d|20\d|2[0-1]\d), (5\d|6\d|7\d), (3\d|4\d|5\d)\)$/);
  await screenshot(page, 'close-armed');
});

test('a read-only hint from an ended tab does not follow the person to a live one', async ({ page, srv }) => {
  const ending = await agentSession(srv);
  const live = await agentSession(srv);
  await openViewer(page, srv);
  await srv.api('POST', `/v2/pty/sessions/${ending}/input`, { input: 'exit 0', press_enter: true });
  await tab(page, ending).click();
  await expect(tab(page, ending)).toHaveAttribute('data-status', 'exited', SLOW);
  await page.getByTestId('terminal').click();
  await page.keyboard.type('x');
  await expect(page.getByTestId('toast').filter({ hasText: 'This session has ended' })).toBeVisible();
  await tab(page, live).click();
  await expect(page.getByTestId('toast').filter({ hasText: 'This session has ended' })).toHaveCount(0);
});

test('the person’s own terminal speaks of no agent: no Take over, no Release', async ({ page, srv }) => {
  await openViewer(page, srv);
  await page.getByRole('button', { name: 'Open a terminal' }).click();
  await expect(page.getByRole('tab')).toHaveCount(1, SLOW);
  await expect(floorButton(page, 'Take over')).toHaveCount(0);
  await expect(floorButton(page, 'Release')).toHaveCount(0);
  await expect(panel(page).getByRole('button', { name: 'Read only' })).toBeVisible();
  await expect(page.getByTestId('floor-banner')).not.toContainText('agent');
  await expect(page.getByTestId('floor-banner')).not.toContainText('Agent');
});

test('a token in the URL signs nobody in; a used login link or an agent’s token at login says what is wrong', async ({ page, srv }) => {
  // Since the login sessions (issue 11) a URL carries no admin token: one there is dropped, and signs nobody in.
  await page.goto(`${srv.url}/?token=${encodeURIComponent(srv.token)}`);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible(SLOW);
  expect(page.url()).not.toContain('token');
  const link = await srv.loginUrl();
  await fetch(`${srv.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: new URL(link).searchParams.get('login') }) });
  await page.goto(link);
  await expect(page.getByText('used already')).toBeVisible(SLOW);
  const field = page.getByLabel('Admin token', { exact: true });
  await field.fill(srv.agentToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('That is the token of the agent agent');
  await screenshot(page, 'login-agent-token');
});

test('at 700 px the sidebar collapses and Interrupt stays in view', async ({ page, srv }) => {
  const id = await agentSession(srv, { cwd: '/tmp', title: 'a narrow window' });
  await page.setViewportSize({ width: 700, height: 600 });
  await openViewer(page, srv);
  // Narrow: the list starts hidden and opens over the terminal.
  await expect(page.getByTestId('sidebar')).toHaveCount(0);
  await page.getByTestId('sidebar-toggle').click();
  await tab(page, id).click();
  await expect(page.getByTestId('sidebar')).toHaveCount(0);
  const interrupt = floorButton(page, 'Interrupt');
  await expect(interrupt).toBeVisible();
  const box = (await interrupt.boundingBox())!;
  expect(box.x + box.width).toBeLessThanOrEqual(700);
  expect(await interrupt.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
  await screenshot(page, 'narrow-700');
  await page.getByTestId('sidebar-toggle').click();
  await expect(page.getByTestId('sidebar')).toBeVisible();
  await screenshot(page, 'narrow-700-sidebar');
});

test('find starts from the newest match', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await agentExec(srv, id, 'for i in 1 2 3 4 5; do echo "needle-$i"; done');
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, 'needle-5');
  await page.getByTestId('terminal').click();
  await page.keyboard.press('Control+Shift+F');
  await page.getByRole('textbox', { name: 'Find in terminal' }).fill('needle-');
  // Six matches (the command line holds one): the first one shown is the last line printed.
  await expect(page.getByTestId('find-count')).toHaveText('6 of 6', SLOW);
  await page.getByRole('textbox', { name: 'Find in terminal' }).press('Enter');
  await expect(page.getByTestId('find-count')).toHaveText('5 of 6');
});

test('while the server is down, switching tabs shows each one’s last screen and the terminal socket waits instead of retrying', async ({ page, srv }) => {
  const a = await agentSession(srv);
  const b = await agentSession(srv);
  await agentExec(srv, a, 'echo alpha-screen');
  await agentExec(srv, b, 'echo beta-screen');
  await openViewer(page, srv);
  await tab(page, a).click();
  await expectTerminalToShow(page, a, 'alpha-screen');
  await tab(page, b).click();
  await expectTerminalToShow(page, b, 'beta-screen');
  const durable = (await srv.api('GET', `/api/sessions/${a}`)).body.durable === true;
  const port = Number(new URL(srv.url).port);
  await stopProcess(srv.proc);
  await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'down', SLOW);
  const viewAttempts: string[] = [];
  page.on('websocket', (ws) => {
    if (ws.url().includes('/view')) viewAttempts.push(ws.url());
  });
  await tab(page, a).click();
  await expect.poll(() => terminalText(page, a)).toContain('alpha-screen');
  await page.waitForTimeout(4000);
  // The events socket backs off and does the knocking; the terminal socket tries nothing meanwhile.
  expect(viewAttempts).toEqual([]);
  await screenshot(page, 'offline-last-screen');
  const again = await serveAgain(srv, port);
  try {
    await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live', { timeout: 30_000 });
    if (durable) await expect.poll(() => viewAttempts.length, SLOW).toBeGreaterThan(0);
  } finally {
    await stopProcess(again);
  }
});
