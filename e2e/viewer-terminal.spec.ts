import type { Page } from '@playwright/test';
import {
  agentExec,
  agentScreen,
  agentSession,
  expect,
  expectTerminalToShow,
  floorButton,
  openViewer,
  rendererOf,
  SLOW,
  tab,
  test,
} from './viewer-helpers';

/** The terminal itself: renderers, flow control, size policy, clipboard, and queries left to the server. */

const domRows = (page: Page) => page.locator('[data-testid="terminal"] .xterm-rows');

test('WebGL renders when the browser has it; the frame says which one draws, the header does not', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await agentExec(srv, id, 'echo drawn-by-$((2*3))-webgl');
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, 'drawn-by-6-webgl');
  await expect.poll(() => rendererOf(page, id)).toBe('webgl');
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-renderer', 'webgl');
  // The renderer is a detail for whoever debugs the viewer, not news for the person.
  await expect(page.getByRole('tabpanel').locator('.session-header')).not.toContainText('WebGL');
  // WebGL paints into a canvas: the DOM renderer's rows are absent.
  await expect(domRows(page)).toHaveCount(0);
});

test('?renderer=dom forces the DOM renderer, and output renders as DOM rows', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await agentExec(srv, id, 'echo drawn-by-$((2*3))-dom');
  await openViewer(page, srv, { renderer: 'dom' });
  await tab(page, id).click();
  await expect(domRows(page)).toContainText('drawn-by-6-dom', SLOW);
  expect(await rendererOf(page, id)).toBe('dom');
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-renderer', 'dom');
});

test('without WebGL in the browser the viewer falls back to the DOM renderer', async ({ page, srv }) => {
  await page.addInitScript(() => {
    const original = HTMLCanvasElement.prototype.getContext;
    HTMLCanvasElement.prototype.getContext = function (this: HTMLCanvasElement, type: string, ...rest: unknown[]) {
      if (type === 'webgl' || type === 'webgl2' || type === 'experimental-webgl') return null;
      return (original as (...a: unknown[]) => RenderingContext | null).call(this, type, ...rest);
    } as typeof HTMLCanvasElement.prototype.getContext;
  });
  const id = await agentSession(srv);
  await agentExec(srv, id, 'echo no-gpu-$((3*3))');
  await openViewer(page, srv);
  await tab(page, id).click();
  await expect(domRows(page)).toContainText('no-gpu-9', SLOW);
  expect(await rendererOf(page, id)).toBe('dom');
  await agentExec(srv, id, 'echo still-live-$((4*4))');
  await expect(domRows(page)).toContainText('still-live-16', SLOW);
});

test('a lost WebGL context falls back to the DOM renderer and output keeps coming', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, '#');
  await expect.poll(() => rendererOf(page, id)).toBe('webgl');
  const lost = await page.evaluate(() => {
    for (const canvas of Array.from(document.querySelectorAll<HTMLCanvasElement>('[data-testid="terminal"] canvas'))) {
      const gl = canvas.getContext('webgl2');
      const ext = gl?.getExtension('WEBGL_lose_context');
      if (ext) {
        ext.loseContext();
        return true;
      }
    }
    return false;
  });
  expect(lost).toBe(true);
  // xterm waits a few seconds for the context to come back before giving up on it.
  await expect.poll(() => rendererOf(page, id), SLOW).toBe('dom');
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-renderer', 'dom');
  await agentExec(srv, id, 'echo after-the-loss-$((5*5))');
  await expect(domRows(page)).toContainText('after-the-loss-25', SLOW);
});

test('flow control: output far beyond the server’s unacknowledged limit still arrives in full', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, '#');
  // About 1.7 MB: over the 1 MiB the server sends ahead of acks, under the 2 MiB below which a viewer is
  // never resynced from a snapshot. Without acks the view would freeze near 150000.
  const done = await agentExec(srv, id, 'seq 1 250000; echo seq-finished');
  expect(done.status).toBe(200);
  await expectTerminalToShow(page, id, /^250000\nseq-finished$/m);
});

test('your own terminal follows the window; an agent’s keeps its size when you watch, type or take over', async ({ page, srv }) => {
  const agent = await agentSession(srv);
  const ptySize = async (id: string) => {
    const s = (await srv.api('GET', `/api/sessions/${id}`)).body;
    return `${s.cols}x${s.rows}`;
  };
  await openViewer(page, srv);
  await page.getByRole('button', { name: 'New terminal' }).click();
  const mine = (await page.locator('[data-owner="admin"] [role="tab"]').getAttribute('data-session-id', SLOW))!;
  await expectTerminalToShow(page, mine, '#');
  const viewSize = () => page.evaluate((sid) => window.__ptydeckTerminalSize?.(sid), mine).then((s) => (s ? `${s.cols}x${s.rows}` : ''));
  // First it fits the window it opened in (the server confirms, the view renders at that size)...
  await expect.poll(() => ptySize(mine), SLOW).not.toBe('80x24');
  const first = await ptySize(mine);
  await expect.poll(viewSize, SLOW).toBe(first);
  // ...then it follows the window down...
  await page.setViewportSize({ width: 900, height: 560 });
  await expect.poll(() => ptySize(mine), SLOW).not.toBe(first);
  const narrow = await ptySize(mine);
  // The view renders at exactly the size the server confirmed.
  await expect.poll(viewSize, SLOW).toBe(narrow);
  // ...and back up.
  await page.setViewportSize({ width: 1280, height: 800 });
  // Taller for sure (a wider window may also open side panels beside the terminal, so its columns need not grow).
  await expect.poll(async () => Number((await ptySize(mine)).split('x')[1]), SLOW).toBeGreaterThan(Number(narrow.split('x')[1]));
  const wide = await ptySize(mine);
  await expect.poll(viewSize, SLOW).toBe(wide);

  await tab(page, agent).click();
  await expectTerminalToShow(page, agent, '#');
  for (const mode of ['Type', 'Take over', 'Watch'] as const) {
    await floorButton(page, mode).click();
    await page.setViewportSize({ width: mode === 'Type' ? 900 : 1100, height: 600 });
    // Give a wrongful resize every chance to happen, then check it did not: the agent's exec round trip
    // is longer than the viewer's resize debounce.
    // (The person's credential runs it: the floor never refuses the person.)
    for (let i = 0; i < 2; i++) await srv.api('POST', `/v2/pty/sessions/${agent}/exec`, { command: 'true' });
    expect(await ptySize(agent), mode).toBe('80x24');
  }
});

test('Ctrl+Shift+V pastes into the terminal and Ctrl+Shift+C copies the selection', async ({ page, context, srv }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: srv.url });
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await tab(page, id).click();
  await floorButton(page, 'Type').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'type', SLOW);
  await expectTerminalToShow(page, id, '#');

  await page.evaluate(() => navigator.clipboard.writeText('echo pasted-$((1+2))'));
  await page.getByTestId('terminal').click();
  await page.keyboard.press('Control+Shift+V');
  // The clipboard is read asynchronously: Enter only once the text is on the command line.
  await expectTerminalToShow(page, id, '# echo pasted-$((1+2))');
  await page.keyboard.press('Enter');
  await expect.poll(() => agentScreen(srv, id), SLOW).toBe('pasted-3');

  // Select the output word with find, then copy it from the terminal.
  await page.keyboard.press('Control+Shift+F');
  await page.getByRole('textbox', { name: 'Find in terminal' }).fill('pasted-3');
  await expect(page.getByTestId('find-count')).toHaveText('1 of 1', SLOW);
  await page.getByRole('textbox', { name: 'Find in terminal' }).press('Escape');
  await page.evaluate(() => navigator.clipboard.writeText('something else'));
  await page.keyboard.press('Control+Shift+C');
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText()), SLOW).toBe('pasted-3');
});

test('the viewer leaves terminal queries to the server: a program reading replies gets exactly one', async ({ page, srv }) => {
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await tab(page, id).click();
  // In Type mode the viewer's replies would reach the PTY; it must send none.
  await floorButton(page, 'Type').click();
  await expect(page.getByTestId('terminal-frame')).toHaveAttribute('data-floor', 'type', SLOW);
  await expectTerminalToShow(page, id, '#');
  // Raw mode, ask for the cursor position and the device attributes, give every reply a second to
  // arrive, then dump what came back (od shows each ESC as 033).
  const probe =
    "stty -echo -icanon min 0 time 10; printf '\\033[6n\\033[c'; sleep 1; dd bs=1000 count=1 2>/dev/null | od -An -c | tr -d ' \\n'; stty sane";
  const res = await agentExec(srv, id, probe);
  expect(res.status).toBe(200);
  const replies = String(res.body.data?.output);
  // One cursor position report and one DA reply, from the server's own terminal: none from the viewer.
  expect(replies).toMatch(/^033\[\d+;\d+R033\[\?[\d;]+c$/);
});
