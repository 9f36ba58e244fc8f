import type { Page, WebSocketRoute } from '@playwright/test';
import { agentExec, agentSession, expect, expectTerminalToShow, openViewer, panel, screenshot, SLOW, tab, test } from './viewer-helpers';

/**
 * What the viewer does beside drawing terminals: desktop notifications through the Electron bridge,
 * and the bridge's token in place of the cookie.
 */

interface Note {
  title: string;
  body: string;
}

/** The preload's bridge as Electron exposes it, recording notifications for the test to read. */
async function fakeBridge(page: Page, bridge: { apiBase: string; token: string }): Promise<void> {
  await page.addInitScript((b) => {
    const notes: { title: string; body: string }[] = [];
    (window as unknown as { __notes: typeof notes }).__notes = notes;
    window.ptydeck = { ...b, notify: (title: string, body: string) => notes.push({ title, body }) };
  }, bridge);
}

const notes = (page: Page): Promise<Note[]> => page.evaluate(() => (window as unknown as { __notes: Note[] }).__notes);

test('a command that fails calls the desktop notifier; one that succeeds does not', async ({ page, srv }) => {
  await fakeBridge(page, { apiBase: '', token: '' });
  const id = await agentSession(srv);
  await openViewer(page, srv);
  await expect(tab(page, id)).toBeVisible(SLOW);
  await agentExec(srv, id, 'true');
  await agentExec(srv, id, 'sh -c "exit 4"');
  const failures = async () => (await notes(page)).filter((n) => n.title.startsWith('Command failed'));
  await expect.poll(failures, SLOW).toEqual([expect.objectContaining({ title: 'Command failed (exit 4)' })]);
  expect((await failures())[0].body).toContain('sh -c "exit 4"');
  // The tab keeps the failure visible after the prompt is back.
  await expect(tab(page, id)).toHaveAttribute('data-status', 'failed', SLOW);
  await expect(tab(page, id)).toContainText('last exit 4');
});

test('a session that starts waiting for input is flagged in its tab and calls the notifier once', async ({ page, srv }) => {
  await fakeBridge(page, { apiBase: '', token: '' });
  // The server's readiness detector is another engineer's work; here the events socket is relayed
  // through the test, which marks the session as waiting the way the server will. While an id is in
  // `waiting`, every frame about it says so, so the real server's own updates (attach counts, say)
  // cannot undo the state under test.
  let events: WebSocketRoute | null = null;
  const last = new Map<string, Record<string, unknown>>();
  const waiting = new Set<string>();
  await page.routeWebSocket(/\/api\/events(\?|$)/, (ws) => {
    events = ws;
    const server = ws.connectToServer();
    server.onMessage((m) => {
      const frame = JSON.parse(String(m));
      if (frame.type === 'hello') for (const s of frame.sessions) last.set(s.id, s);
      if (frame.type === 'session') {
        if (waiting.has(frame.session.id)) frame.session.waitingForInput = true;
        last.set(frame.session.id, frame.session);
      }
      ws.send(JSON.stringify(frame));
    });
  });
  const id = await agentSession(srv);
  await agentExec(srv, id, 'echo ready');
  await openViewer(page, srv);
  await tab(page, id).click();
  await expectTerminalToShow(page, id, 'ready');
  await expect.poll(() => last.has(id)).toBe(true);
  const send = (patch: Record<string, unknown> = {}) =>
    events!.send(JSON.stringify({ type: 'session', session: { ...last.get(id)!, ...patch, waitingForInput: waiting.has(id) } }));
  waiting.add(id);
  send();
  await expect(tab(page, id)).toHaveAttribute('data-status', 'waiting', SLOW);
  await expect(panel(page).getByTestId('status-badge')).toHaveText('waiting for input');
  await expect(page.getByTestId('session-count')).toContainText('1 waiting for input');
  await expect(page).toHaveTitle('(1) ptydeck');
  await expect.poll(() => notes(page), SLOW).toEqual([expect.objectContaining({ title: 'Waiting for input' })]);
  await screenshot(page, 'waiting-for-input');
  // Still waiting is not news.
  send({ attached: 5 });
  waiting.delete(id);
  send();
  await expect(tab(page, id)).not.toHaveAttribute('data-status', 'waiting', SLOW);
  expect(await notes(page)).toHaveLength(1);
});

test('in Electron the preload’s token authenticates the API and both sockets, with no cookie and no login form', async ({ browser, srv }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await fakeBridge(page, { apiBase: srv.url, token: srv.token });
    const bearer: string[] = [];
    const sockets: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/')) bearer.push(r.headers()['authorization'] ?? '');
    });
    page.on('websocket', (ws) => sockets.push(ws.url()));
    const id = await agentSession(srv);
    await agentExec(srv, id, 'echo through-the-bridge');
    await page.goto(srv.url + '/');
    await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live', SLOW);
    await expect(page.getByLabel('Admin token', { exact: true })).toHaveCount(0);
    await tab(page, id).click();
    await expectTerminalToShow(page, id, 'through-the-bridge');
    expect(await context.cookies()).toEqual([]);
    expect(bearer.length).toBeGreaterThan(0);
    expect(bearer.every((h) => h === `Bearer ${srv.token}`)).toBe(true);
    expect(sockets.some((u) => u.includes('/api/events?api_key='))).toBe(true);
    expect(sockets.some((u) => u.includes(`/api/sessions/${id}/view?api_key=`))).toBe(true);
  } finally {
    await context.close();
  }
});
