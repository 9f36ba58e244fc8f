import {
  agentExec,
  agentScreen,
  agentSession,
  agentToken,
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
 * The viewer in Chromium against a real `ptydeck serve`. The agent is this test code on the AIO v2 REST
 * API with an agent token of its own; the person is the page. Screenshots of each state go to
 * test-results/screens/.
 */

test('a login link signs in once: the code leaves the address bar, the cookie is HttpOnly and named for the port, and is no credential alone', async ({ page, context, srv }) => {
  const link = await srv.loginUrl();
  expect(link).not.toContain(srv.token);
  await page.goto(link);
  await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live', SLOW);
  expect(page.url()).not.toContain('login=');
  const port = new URL(srv.url).port;
  const viewer = (await context.cookies()).find((c) => c.name === `ptydeck_viewer_${port}`);
  expect(viewer?.httpOnly).toBe(true);
  expect(viewer?.sameSite).toBe('Strict');
  expect(viewer?.expires).toBe(-1); // a session cookie
  await expect(page.getByRole('heading', { name: 'ptydeck' })).toBeVisible();
  // With its key the page may call the API; the cookie alone (what another port would receive) may not.
  const [withKey, cookieOnly] = await page.evaluate(async () => {
    const key = localStorage.getItem('ptydeck.viewerKey') ?? '';
    const a = await fetch('/v2/pty/sessions', { headers: { 'X-Ptydeck-Viewer-Key': key } });
    const b = await fetch('/v2/pty/sessions');
    return [a.status, b.status];
  });
  expect([withKey, cookieOnly]).toEqual([200, 401]);
  // The same link again opens nothing: the page asks to sign in, saying why.
  const again = await context.browser()!.newContext();
  try {
    const other = await again.newPage();
    await other.goto(link);
    await expect(other.getByLabel('Admin token', { exact: true })).toBeVisible(SLOW);
    await expect(other.locator('.login-message')).toContainText('used already');
  } finally {
    await again.close();
  }
});

test('a page without the cookie asks for the admin token, refuses a wrong one and signs in with the right one', async ({ page, srv }) => {
  // Arriving signed out is expected: nothing on the way to the login form is an error (no 401, no 404).
  const errors: string[] = [];
  page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
  const failed: string[] = [];
  page.on('response', (r) => void (r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`)));
  await page.goto(srv.url + '/');
  const field = page.getByLabel('Admin token', { exact: true });
  await expect(field).toBeVisible(SLOW);
  const icon = await page.evaluate(async () => {
    const r = await fetch('/favicon.ico');
    return { status: r.status, type: r.headers.get('content-type'), declared: Array.from(document.querySelectorAll<HTMLLinkElement>('link[rel=icon]'), (l) => new URL(l.href).pathname) };
  });
  expect(icon).toEqual({ status: 200, type: 'image/x-icon', declared: ['/favicon.ico', '/favicon.svg'] });
  expect(errors).toEqual([]);
  expect(failed).toEqual([]);
  await screenshot(page, 'login');
  await field.fill('not-the-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText("not this server's admin token");
  await field.fill(srv.token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live', SLOW);
  await expect(page.getByTestId('empty-state')).toBeVisible();
});

test('the empty state says how agents open terminals, and opens one of your own that you can type into', async ({ page, srv }) => {
  await openViewer(page, srv);
  const empty = page.getByTestId('empty-state');
  await expect(empty.getByRole('heading', { name: 'No terminals yet' })).toBeVisible();
  await expect(empty).toContainText('/v2/pty/sessions');
  await expect(page.getByRole('tab')).toHaveCount(0);
  await screenshot(page, 'empty');

  await empty.getByRole('button', { name: 'Open a terminal' }).click();
  const mine = page.getByRole('tab');
  await expect(mine).toHaveCount(1, SLOW);
  const id = (await mine.getAttribute('data-session-id'))!;
  await expect(page.getByTestId('owner-group')).toHaveAttribute('data-owner', 'admin');
  await expect(page.getByTestId('owner-group').getByRole('heading')).toHaveText(/^You\s*1$/);
  await expect(page.getByTestId('floor-holder')).toHaveText('Your terminal');
  // A person's own terminal starts in Type: the keys go straight in.
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'type');
  await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live');
  await page.getByTestId('terminal').click();
  await page.keyboard.type('echo mine-$((40+2))-$PTYDECK_TEST_PERSON_RC');
  await page.keyboard.press('Enter');
  // The person's own ~/.bashrc was read (the test's HOME has one that sets this).
  await expectTerminalToShow(page, id, 'mine-42-loaded');
});

test('an agent’s new session appears without a reload, shows its output, its running command, and Interrupt stops it', async ({ page, srv }) => {
  await openViewer(page, srv);
  await expect(page.getByTestId('empty-state')).toBeVisible();
  const id = await agentSession(srv);
  await expect(tab(page, id)).toBeVisible(SLOW);
  const exec = await agentExec(srv, id, 'echo agent-says-$((6*7)); ls -la /usr/lib | head -20');
  expect(exec.status).toBe(200);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, 'agent-says-42');
  // An agent's session opens in Watch, and the frame says so.
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'watch');
  await expect(page.getByTestId('floor-holder')).toHaveText('Agent has the floor');
  await expect(floorButton(page, 'Watch')).toHaveAttribute('aria-pressed', 'true');
  await expect(panel(page).getByTestId('status-badge')).toHaveAttribute('data-status', 'prompt', SLOW);
  await screenshot(page, 'watching');

  // A command that keeps running: the tab says so and names it.
  const started = await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: 'sleep 300', async: true });
  expect(started.status).toBe(200);
  await expect(tab(page, id)).toHaveAttribute('data-status', 'running', SLOW);
  await expect(tab(page, id)).toContainText('sleep 300');
  await expect(panel(page).getByTestId('session-command')).toHaveText('sleep 300');
  await screenshot(page, 'running');
  // Interrupting an agent's running command takes a second click, which names what it stops.
  await floorButton(page, 'Interrupt').click();
  await expect(panel(page).getByTestId('interrupt')).toHaveText('Stop sleep 300?');
  await expect(tab(page, id)).toHaveAttribute('data-status', 'running');
  await panel(page).getByTestId('interrupt').click();
  await expect(tab(page, id)).not.toHaveAttribute('data-status', 'running', SLOW);
  await expectTerminalToShow(page, id, '^C');
  await expect(page.getByTestId('toast').filter({ hasText: 'You interrupted sleep 300' })).toBeVisible();
});

test('Watch is read only; after Type the person’s keys reach the shell the agent reads', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await tab(page, id).click();
  await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live');
  await expectTerminalToShow(page, id, '#');

  // Watching: keys are not sent, and the page says why.
  await page.getByTestId('terminal').click();
  await page.keyboard.type('echo typed-while-watching');
  await expect(page.getByTestId('toast').filter({ hasText: 'You are watching' })).toBeVisible();
  expect(await terminalText(page, id)).not.toContain('typed-while-watching');

  await floorButton(page, 'Type').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'type', SLOW);
  await expect(floorButton(page, 'Type')).toHaveAttribute('aria-pressed', 'true');
  await expect(tab(page, id).getByTestId('floor-chip')).toHaveAttribute('data-floor', 'type');
  // Typing beside the agent leaves the agent's terminal its size.
  await expect(page.getByTestId('pty-size')).toHaveText('80×24');
  await page.getByTestId('terminal').click();
  await page.keyboard.type('echo hi');
  await page.keyboard.press('Enter');
  await expect.poll(() => agentScreen(srv, id), SLOW).toBe('hi');
  await expectTerminalToShow(page, id, /^hi$/m);
  // The agent still types too.
  expect((await agentExec(srv, id, 'echo agent-too')).body.data?.output).toBe('agent-too');
  await expectTerminalToShow(page, id, 'agent-too');
  await screenshot(page, 'type-mode');
});

test('Take over refuses the agent with 423 and says why; Release gives the floor back', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, '#');
  const frame = page.getByTestId('terminal-frame');

  await floorButton(page, 'Take over').click();
  await expect(frame).toHaveAttribute('data-floor', 'takeover', SLOW);
  await expect(frame).toHaveAttribute('data-controller', 'person');
  await expect(page.getByTestId('floor-holder')).toHaveText('You hold the floor');
  await expect(tab(page, id).getByTestId('floor-chip')).toHaveAttribute('data-floor', 'takeover');
  await expect(floorButton(page, 'Release')).toBeEnabled();

  const refused = await agentExec(srv, id, 'echo agent-blocked');
  expect(refused.status).toBe(423);
  expect(refused.body.message).toMatch(/A person has taken control/);

  // The person types while holding the floor.
  await page.getByTestId('terminal').click();
  await page.keyboard.type('echo person-holds-$((1+1))');
  await page.keyboard.press('Enter');
  await expectTerminalToShow(page, id, 'person-holds-2');
  await screenshot(page, 'taken-over');

  await floorButton(page, 'Release').click();
  await expect(frame).toHaveAttribute('data-floor', 'watch', SLOW);
  await expect(frame).toHaveAttribute('data-controller', 'agent');
  await expect(page.getByTestId('floor-holder')).toHaveText('Agent has the floor');
  await expect(floorButton(page, 'Release')).toBeDisabled();
  const back = await agentExec(srv, id, 'echo agent-back');
  expect(back.status).toBe(200);
  expect(back.body.data?.output).toBe('agent-back');
  await expectTerminalToShow(page, id, 'agent-back');
});

test('two pages watching one session both see a command’s output', async ({ page, context, srv }) => {
  const id = await agentSession(srv);
  await openViewer(page, srv);
  const second = await context.newPage();
  await second.goto(srv.url + '/');
  await expect(second.getByTestId('link-state')).toHaveAttribute('data-state', 'live', SLOW);
  for (const p of [page, second]) {
    await tab(p, id).click();
    await expectTerminalToShow(p, id, '#');
  }
  await agentExec(srv, id, 'echo seen-by-$((1+1))-pages');
  await expectTerminalToShow(page, id, 'seen-by-2-pages');
  await expectTerminalToShow(second, id, 'seen-by-2-pages');
  // Each page counts the other viewer, not itself.
  await expect(panel(second).getByTestId('other-viewers')).toHaveText('1 other viewer', SLOW);
  await expect(panel(page).getByTestId('other-viewers')).toHaveText('1 other viewer', SLOW);
});

test('find in terminal: Ctrl+Shift+F opens the find bar, matches are counted, highlighted and stepped through', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await agentExec(srv, id, 'printf "hay\\nneedle one\\nhay\\nneedle two\\nhay\\n"');
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, 'needle two');
  await page.getByTestId('terminal').click();
  await page.keyboard.press('Control+Shift+F');
  const find = page.getByRole('searchbox', { name: 'Find in terminal' }).or(page.getByRole('textbox', { name: 'Find in terminal' }));
  await expect(find).toBeFocused();
  await find.fill('needle');
  // The command line itself (`printf "...needle..."`) holds two more.
  const count = page.getByTestId('find-count');
  await expect(count).toHaveText(/^\d of 4$/, SLOW);
  await expect.poll(() => page.evaluate((sid) => window.__ptydeckTerminalSelection?.(sid), id)).toBe('needle');
  await expect(page.locator('.xterm-decoration-container .xterm-decoration').first()).toBeAttached();
  const first = await count.textContent();
  await find.press('Enter');
  await expect(count).not.toHaveText(first!);
  await screenshot(page, 'find-bar');
  await find.fill('no-such-word');
  await expect(count).toHaveText('No results');
  await find.press('Escape');
  await expect(page.getByTestId('find-bar')).toHaveCount(0);
});

test('an ended session is shown as ended until dismissed; closing a live agent session asks twice', async ({ page, srv }) => {
  const ending = await agentSession(srv);
  const live = await agentSession(srv);
  await openViewer(page, srv);
  await tab(page, ending).click();
  await expectTerminalToShow(page, ending, '#');
  await srv.api('POST', `/v2/pty/sessions/${ending}/input`, { input: 'exit 3', press_enter: true });
  await expect(tab(page, ending)).toHaveAttribute('data-status', 'exited', SLOW);
  await expect(tab(page, ending)).toContainText('exited (code 3)');
  await expect(panel(page).getByTestId('status-badge')).toHaveText('exited (code 3)');
  await expect(page.getByTestId('floor-banner')).toContainText('exited with code 3');
  // No floor to hold any more: the controls go, Dismiss stays.
  await expect(floorButton(page, 'Type')).toHaveCount(0);
  await screenshot(page, 'ended');
  await panel(page).getByRole('button', { name: 'Dismiss' }).click();
  await expect(tab(page, ending)).toHaveCount(0, SLOW);
  expect((await srv.api('GET', `/api/sessions/${ending}`)).status).toBe(404);

  await tab(page, live).click();
  await panel(page).getByRole('button', { name: 'Close' }).click();
  await expect(tab(page, live)).toBeVisible();
  await panel(page).getByRole('button', { name: 'Really close?' }).click();
  await expect(tab(page, live)).toHaveCount(0, SLOW);
  await expect(page.getByTestId('empty-state')).toBeVisible();
});

test('when the server goes away the page says so, and recovers when a server comes back on the same port', async ({ page, srv }) => {
  const before = await agentSession(srv);
  const durable = (await srv.api('GET', `/api/sessions/${before}`)).body.durable === true;
  await agentExec(srv, before, 'echo before-the-restart');
  await openViewer(page, srv);
  await tab(page, before).click();
  await expectTerminalToShow(page, before, 'before-the-restart');

  const port = Number(new URL(srv.url).port);
  await stopProcess(srv.proc);
  const banner = page.getByTestId('connection-banner');
  await expect(banner).toBeVisible(SLOW);
  await expect(banner).toContainText('Server unreachable — reconnecting…');
  await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'down');
  await screenshot(page, 'reconnecting');

  const again = await serveAgain(srv, port);
  try {
    await expect(banner).toHaveCount(0, { timeout: 30_000 });
    await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live');
    if (durable) {
      // A durable (tmux) session outlived the restart: its view reconnects and shows the same screen.
      await expect(page.getByTestId('view-link')).toHaveCount(0, SLOW);
      await expectTerminalToShow(page, before, 'before-the-restart');
    } else {
      // The old server's sessions went with it; the list says so without a reload.
      await expect(tab(page, before)).toHaveCount(0, SLOW);
    }
    const after = await agentSession(srv);
    await agentExec(srv, after, 'echo after-the-restart');
    await tab(page, after).click();
    await expectTerminalToShow(page, after, 'after-the-restart');
  } finally {
    await stopProcess(again);
  }
});

test('/terminal?session_id= (AIO’s WebShell link) opens on that session', async ({ page, srv }) => {
  await agentSession(srv);
  const wanted = await agentSession(srv);
  await agentExec(srv, wanted, 'echo the-wanted-one');
  await openViewer(page, srv);
  await page.goto(`${srv.url}/terminal?session_id=${wanted}`);
  await expect(tab(page, wanted)).toHaveAttribute('aria-selected', 'true', SLOW);
  await expectTerminalToShow(page, wanted, 'the-wanted-one');
});

test('sessions are grouped by the agent that owns them, each tab showing its state; arrow keys move between tabs', async ({ page, srv }) => {
  const claude = agentToken(srv, 'claude');
  const codex = agentToken(srv, 'codex');
  const build = await agentSession(srv, { cwd: '/usr/lib' }, claude);
  const tests = await agentSession(srv, { cwd: '/tmp' }, claude);
  const lint = await agentSession(srv, { cwd: '/etc' }, codex);
  await agentExec(srv, build, 'ls | head -30', claude);
  await srv.api('POST', `/v2/pty/sessions/${build}/exec`, { command: 'sleep 300', async: true }, claude);
  await agentExec(srv, tests, 'echo 3 passed, 1 failed; false', claude);
  await agentExec(srv, lint, 'echo clean', codex);
  await openViewer(page, srv);
  await page.getByRole('button', { name: 'New terminal' }).click();
  await expect(page.getByRole('tab')).toHaveCount(4, SLOW);
  // The new terminal is selected once its creation is answered.
  await expect(page.locator('[data-owner="admin"] [role="tab"]')).toHaveAttribute('aria-selected', 'true', SLOW);

  const groups = page.getByTestId('owner-group');
  await expect(groups).toHaveCount(3);
  expect(await groups.evaluateAll((els) => els.map((e) => e.getAttribute('data-owner')))).toEqual(['claude', 'codex', 'admin']);
  await expect(groups.nth(0).getByRole('tab')).toHaveCount(2);
  await expect(page.getByRole('heading', { name: 'claude' })).toBeVisible();
  await expect(tab(page, build)).toHaveAttribute('data-status', 'running', SLOW);
  await expect(tab(page, build)).toContainText('sleep 300');
  await expect(tab(page, tests)).toHaveAttribute('data-status', 'failed');
  await expect(tab(page, lint)).toHaveAttribute('data-status', 'prompt');

  await tab(page, build).click();
  await expectTerminalToShow(page, build, 'sleep 300');
  await screenshot(page, 'overview');
  await tab(page, build).press('ArrowDown');
  await expect(tab(page, tests)).toHaveAttribute('aria-selected', 'true');
  await expect(tab(page, tests)).toBeFocused();
  await expectTerminalToShow(page, tests, '3 passed, 1 failed');
});
