import type { Page } from '@playwright/test';
import { agentExec, agentSession, escapeRegExp, expect, expectTerminalToShow, floorButton, openViewer, panel, screenshot, SLOW, tab, test } from './viewer-helpers';

/**
 * The timeline panel and the replay, in Chromium against a real `ptydeck serve`: who did what beside
 * the terminal, and any session, live or closed, played back as it was at a chosen moment.
 */
const replayText = (page: Page): Promise<string> => page.evaluate(() => window.__ptydeckReplayText?.() ?? '');
const replayState = (page: Page) => page.evaluate(() => window.__ptydeckReplayState?.() ?? null);
/** Text that contains `present` and not `absent` (as one pattern, so that a poll waits for both at once). */
const showsWithout = (present: string, absent: string): RegExp => new RegExp(`^(?![\\s\\S]*${escapeRegExp(absent)})[\\s\\S]*${escapeRegExp(present)}`);

test('a closed session is replayed from the Recordings page, and a timeline event shows the screen as it was then', async ({ page, srv }) => {
  // Several commands, a replay and a play-through: more than one page test's usual minute on a busy machine.
  test.slow();
  const id = await agentSession(srv);
  expect((await agentExec(srv, id, 'echo first-$((1+1))')).body.data?.output).toBe('first-2');
  expect((await agentExec(srv, id, 'echo second-$((2+2))')).body.data?.output).toBe('second-4');
  expect((await srv.api('DELETE', `/v2/pty/sessions/${id}`, undefined, srv.agentToken)).status).toBe(200);

  await openViewer(page, srv);
  await page.getByRole('button', { name: 'Recordings' }).click();
  const row = page.getByTestId('recording-row').filter({ has: page.getByText(id, { exact: true }) });
  await expect(row).toBeVisible(SLOW);
  await expect(row).not.toContainText('live');
  await screenshot(page, 'recordings');
  await row.getByRole('button', { name: 'Replay' }).click();

  const replay = page.getByTestId('replay');
  await expect(replay).toBeVisible();
  // It opens at the end: everything the session printed.
  await expect.poll(() => replayText(page), SLOW).toContain('second-4');

  // The recording's timeline beside it: the agent ran two commands.
  const events = page.getByTestId('timeline-event');
  const ended = events.and(page.locator('[data-kind="command-ended"]'));
  await expect(ended).toHaveCount(2, SLOW);
  await expect(ended.first()).toContainText('echo first-$((1+1))');
  await expect(ended.first()).toHaveAttribute('data-who', 'agent');

  // The moment the first command ended: its output is there, the second command's is not yet.
  await ended.first().click();
  await expect(ended.first()).toHaveClass(/selected/);
  // One poll for both: the screen shown before the seek lands (the end) holds first-2 already.
  await expect.poll(() => replayText(page), SLOW).toMatch(showsWithout('first-2', 'second-4'));
  await screenshot(page, 'replay-at-event');

  // The moment the session opened: only the prompt.
  await events.and(page.locator('[data-kind="created"]')).click();
  await expect.poll(() => replayText(page), SLOW).not.toContain('first-2');

  // Play to the end at 16×: the screen catches up with the session's end.
  await replay.getByLabel('Speed').selectOption('16');
  await replay.getByRole('button', { name: 'Play' }).click();
  await expect.poll(async () => (await replayState(page))?.playing, SLOW).toBe(false);
  const state = await replayState(page);
  expect(state?.speed).toBe(16);
  expect(state?.time).toBeCloseTo(state?.duration ?? -1, 3);
  await expect.poll(() => replayText(page), SLOW).toContain('second-4');

  // A click at the scrubber's left end goes back to the start.
  await replay.getByLabel('Position').click({ position: { x: 2, y: 8 } });
  await expect.poll(() => replayText(page), SLOW).not.toContain('first-2');

  // Export hands over the .cast itself.
  const download = page.waitForEvent('download');
  await replay.getByRole('button', { name: 'Export .cast' }).click();
  const file = await download;
  expect(file.suggestedFilename()).toMatch(new RegExp(`^${id}-.*\\.cast$`));
});

test('the timeline beside a live terminal says who did what, filters by who, and a click replays that moment', async ({ page, srv }) => {
  // Several commands, a replay and a play-through: more than one page test's usual minute on a busy machine.
  test.slow();
  const id = await agentSession(srv);
  expect((await agentExec(srv, id, 'echo from-the-agent')).body.data?.output).toBe('from-the-agent');
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, 'from-the-agent');

  // The person types beside the agent.
  await floorButton(page, 'Type').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'type', SLOW);
  await page.getByTestId('terminal').click();
  await page.keyboard.type('echo from-the-person');
  await page.keyboard.press('Enter');
  await expectTerminalToShow(page, id, /^from-the-person$/m);

  const timeline = panel(page).getByTestId('timeline-panel');
  const started = timeline.getByTestId('timeline-event').and(page.locator('[data-kind="command-started"]'));
  await expect(started.and(page.locator('[data-who="agent"]'))).toContainText('echo from-the-agent', SLOW);
  await expect(started.and(page.locator('[data-who="person"]'))).toContainText('echo from-the-person', SLOW);
  await expect(timeline.getByTestId('timeline-event').and(page.locator('[data-kind="floor"]'))).toContainText('Typing alongside');
  await screenshot(page, 'timeline-live');

  // Only the agent's doings.
  await timeline.getByRole('button', { name: 'agent', exact: true }).click();
  await expect(timeline.getByTestId('timeline-event').and(page.locator('[data-who="person"]'))).toHaveCount(0);
  await expect(started.and(page.locator('[data-who="agent"]'))).toBeVisible();
  await timeline.getByRole('button', { name: 'Everyone' }).click();
  await expect(started.and(page.locator('[data-who="person"]'))).toBeVisible();

  // Back to the moment the agent's command started: the person's command is not on that screen.
  await started.and(page.locator('[data-who="agent"]')).click();
  await expect(panel(page).getByTestId('replay')).toBeVisible();
  await expect.poll(() => replayText(page), SLOW).toMatch(showsWithout('echo from-the-agent', 'from-the-person'));
  await screenshot(page, 'timeline-replay-live');
  await panel(page).getByRole('button', { name: 'Back to live' }).click();
  await expectTerminalToShow(page, id, 'from-the-person');
});
