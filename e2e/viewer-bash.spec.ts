import { expect, expectTerminalToShow, floorButton, openViewer, panel, screenshot, SLOW, tab, test, terminalText } from './viewer-helpers';

/**
 * A bash-API session (AIO's /v1/bash: commands on pipes, no terminal) in the viewer: a tab like any
 * other, marked as pipes, its stderr in red and its command lines in cyan, live as the agent polls.
 */
type Color = { mode: 'default' | 'palette' | 'rgb'; color: number } | null;

const colorOf = (page: import('@playwright/test').Page, id: string, text: string): Promise<Color> =>
  page.evaluate(([sid, t]) => window.__ptydeckTerminalColor?.(sid, t) ?? null, [id, text] as const);

test('a bash-API session shows as a pipe session, its stdout and stderr told apart', async ({ page, srv }) => {
  await openViewer(page, srv);
  // The agent, with its own token, as an agent would call.
  const first = await srv.api('POST', '/v1/bash/exec', { command: 'echo plain-$((1+1)); echo red-$((2+2)) >&2; exit 5' }, srv.agentToken);
  expect(first.status).toBe(200);
  const id: string = first.body.data.session_id;
  await expect(tab(page, id)).toBeVisible(SLOW);
  await tab(page, id).click();

  await expectTerminalToShow(page, id, 'red-4');
  const text = await terminalText(page, id);
  // In order, each on its own line (a bare LF on pipes still starts a new line at column 0).
  expect(text).toContain('$ echo plain-$((1+1)); echo red-$((2+2)) >&2; exit 5\nplain-2\nred-4\n[exit 5]');
  // stdout as written, stderr in the theme's red (palette 1), the transcript in cyan (palette 6).
  expect(await colorOf(page, id, 'plain-2')).toEqual({ mode: 'default', color: -1 });
  expect(await colorOf(page, id, 'red-4')).toEqual({ mode: 'palette', color: 1 });
  expect(await colorOf(page, id, '[exit 5]')).toEqual({ mode: 'palette', color: 6 });

  await expect(panel(page).getByTestId('session-kind')).toContainText('pipes');
  await expect(panel(page).getByTestId('pty-size')).toHaveCount(0);
  await expect(panel(page).getByTestId('status-badge')).toContainText('idle · last exit 5', SLOW);
  await screenshot(page, 'bash-session');

  // A long command streams in while it runs, and the tab names it.
  const running = await srv.api(
    'POST',
    '/v1/bash/exec',
    { session_id: id, command: 'for i in 1 2 3; do echo tick-$i; sleep 0.3; done; echo to$((0))ck >&2; sleep 300', async_mode: true },
    srv.agentToken,
  );
  expect(running.body.data.status).toBe('running');
  await expectTerminalToShow(page, id, 'to0ck');
  expect(await colorOf(page, id, 'to0ck')).toEqual({ mode: 'palette', color: 1 });
  expect(await colorOf(page, id, 'tick-3')).toEqual({ mode: 'default', color: -1 });
  await expect(tab(page, id)).toHaveAttribute('data-status', 'running', SLOW);
  await expect(panel(page).getByTestId('session-command')).toContainText('for i in 1 2 3');

  // Interrupt reaches the command on pipes too (as SIGINT); an agent's running command takes a second click.
  await floorButton(page, 'Interrupt').click();
  await expect(panel(page).getByTestId('interrupt')).toContainText('Stop for i in 1 2 3');
  await panel(page).getByTestId('interrupt').click();
  await expectTerminalToShow(page, id, '[killed by SIGINT]');
  await expect(tab(page, id)).not.toHaveAttribute('data-status', 'running', SLOW);

  // Closed by the agent: the tab goes.
  await srv.api('POST', `/v1/bash/sessions/${id}/close`, undefined, srv.agentToken);
  await expect(tab(page, id)).toHaveCount(0, SLOW);
});
