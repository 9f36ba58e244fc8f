import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test as base, type Locator, type Page } from '@playwright/test';
import { startCliServer, type CliServer } from './fixtures';

/**
 * Helpers for the viewer's browser tests. Each test gets its own server (`srv`), so the session list
 * starts empty and no test sees another's terminals. The "agent" is test code on the AIO v2 REST API.
 *
 * The viewer does not care which backend runs the shell, so these tests pin the native one (fast, no
 * tmux server per test); PTYDECK_E2E_BACKEND=tmux runs them on the durable backend instead.
 */
export const BACKEND = process.env.PTYDECK_E2E_BACKEND || 'native';

export const test = base.extend<{ srv: CliServer; serverEnv: Record<string, string> }>({
  /** Extra environment for the test's server (`test.use({ serverEnv: {...} })`), e.g. a short floor lease. */
  serverEnv: [{}, { option: true }],
  srv: async ({ serverEnv }, use, testInfo) => {
    const srv = await startCliServer({ AIO_SHELL_BACKEND: BACKEND, ...serverEnv });
    // The server's own output, attached to a failed test: a failure may be the server's.
    let exit = '';
    srv.proc.once('exit', (code, signal) => (exit = `\n[server exited: code ${code}, signal ${signal}]\n`));
    await use(srv);
    const log = srv.output() + exit;
    await srv.stop();
    if (testInfo.status !== testInfo.expectedStatus) {
      const path = testInfo.outputPath('server.log');
      writeFileSync(path, log);
      await testInfo.attach('server.log', { path, contentType: 'text/plain' });
    }
  },
});
export { expect };

/** Generous: the machine is shared, and a shell start or a socket reconnect may take a while. */
export const SLOW = { timeout: 20_000 } as const;

/** Opens the viewer the way a person does: a one-time login link, which the page trades for a viewer session. */
export async function openViewer(page: Page, srv: CliServer, query: Record<string, string> = {}): Promise<void> {
  const url = new URL(await srv.loginUrl());
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  await page.goto(url.toString());
  await expect(page.getByTestId('link-state')).toHaveAttribute('data-state', 'live', SLOW);
  // The approvals socket opens once the page is live; a command that starts waiting before its starting
  // list arrives is part of that list, not news (no notification).
  await expect(page.getByTestId('approvals-toggle')).toHaveAttribute('data-live', 'true', SLOW);
}

/** An agent token of its own (`ptydeck token create`); the running server picks the file change up. */
export function agentToken(srv: CliServer, name: string): string {
  return execFileSync(process.execPath, [join(__dirname, '..', 'bin', 'ptydeck.js'), 'token', 'create', '--name', name], {
    env: { ...process.env, PTYDECK_TOKEN: '', PTYDECK_HOME: srv.home },
    encoding: 'utf8',
  }).trim();
}

/** AIO's answer envelope, with the fields these tests read. */
export interface AioAnswer {
  success: boolean;
  message: string;
  data: { session_id?: string; output?: string } | null;
}

export async function agentSession(srv: CliServer, body: Record<string, unknown> = { cwd: '/tmp' }, token = srv.agentToken): Promise<string> {
  const res = await srv.api<AioAnswer>('POST', '/v2/pty/sessions', body, token);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data!.session_id!;
}

export async function agentExec(srv: CliServer, id: string, command: string, token = srv.agentToken): Promise<{ status: number; body: AioAnswer }> {
  return srv.api<AioAnswer>('POST', `/v2/pty/sessions/${id}/exec`, { command }, token);
}

export async function agentScreen(srv: CliServer, id: string): Promise<string> {
  const res = await srv.api<AioAnswer>('GET', `/v2/pty/sessions/${id}/screen`);
  return String(res.body?.data?.output ?? '');
}

/** A session's tab, by id (its accessible name is its title). */
export const tab = (page: Page, id: string): Locator => page.locator(`[role="tab"][data-session-id="${id}"]`);
export const panel = (page: Page): Locator => page.getByRole('tabpanel');
export const floorButton = (page: Page, name: 'Watch' | 'Type' | 'Take over' | 'Release' | 'Interrupt'): Locator =>
  panel(page).getByRole('button', { name, exact: true });

/** The terminal's buffer text through the page's test hook (works with the WebGL renderer too). */
export async function terminalText(page: Page, id: string): Promise<string> {
  return page.evaluate((sid) => window.__ptydeckTerminalText?.(sid) ?? '', id);
}

export async function expectTerminalToShow(page: Page, id: string, text: string | RegExp): Promise<void> {
  const poll = expect.poll(() => terminalText(page, id), { ...SLOW, message: `terminal ${id} shows ${text}` });
  if (typeof text === 'string') await poll.toContain(text);
  else await poll.toMatch(text);
}

export async function rendererOf(page: Page, id: string): Promise<string | null> {
  return page.evaluate((sid) => window.__ptydeckTerminalRenderer?.(sid) ?? null, id);
}

const SCREENS = join(__dirname, '..', 'test-results', 'screens');

/** A screenshot for a person to look at (test-results/screens/<name>.png). */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENS, { recursive: true });
  // Let xterm paint the last write before the picture.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.screenshot({ path: join(SCREENS, `${name}.png`) });
}

/** A second `ptydeck serve` on the same port and home (hence the same admin token, and the viewer sessions kept there). */
export async function serveAgain(srv: CliServer, port: number): Promise<ChildProcess> {
  const proc = spawn(process.execPath, [join(__dirname, '..', 'bin', 'ptydeck.js'), 'serve', '--port', String(port)], {
    env: { ...process.env, PTYDECK_TOKEN: '', PTYDECK_HOME: srv.home, AIO_SHELL_BACKEND: BACKEND },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  proc.stdout!.on('data', (d) => (log += d));
  proc.stderr!.on('data', (d) => (log += d));
  await expect
    .poll(
      async () => {
        if (proc.exitCode !== null) throw new Error(`second server exited:\n${log}`);
        try {
          return (await fetch(`${srv.url}/health`)).status;
        } catch {
          return 0;
        }
      },
      { timeout: 20_000, message: 'the second server answers /health' },
    )
    .toBe(200);
  return proc;
}

export async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}

/** `s` as a regular expression that matches it literally. */
export const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
