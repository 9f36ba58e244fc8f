import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import type { CliServer } from './fixtures';
import { agentSession, expect, expectTerminalToShow, openViewer, panel, screenshot, SLOW, tab, test } from './viewer-helpers';

/**
 * Approve before it runs, as a person sees it: an agent's gated command waits in the queue, the person
 * decides on its card, and the agent's call answers accordingly. The "agent" calls with its own token
 * (`srv.agentToken`): the person's token is never gated.
 */

const ASK = { default: 'allow', rules: [{ pattern: '^touch ', action: 'ask' }, { pattern: '\\brm\\s+-[a-z]*r', action: 'ask' }] };

async function setPolicy(srv: CliServer, policy: unknown): Promise<void> {
  const r = await srv.api('PUT', '/api/policy', policy);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

const card = (page: Page, command: string | RegExp) => page.getByTestId('approval-card').filter({ hasText: command });

function scratch(): string {
  return mkdtempSync(join(tmpdir(), 'ptydeck-e2e-approvals-'));
}

test("an agent's gated touch waits; the person approves it in the viewer; the file exists and the exec answers completed", async ({ page, srv }) => {
  const dir = scratch();
  try {
    await setPolicy(srv, ASK);
    const id = await agentSession(srv, { cwd: dir });
    await openViewer(page, srv);
    await expect(tab(page, id)).toBeVisible(SLOW);
    const file = join(dir, 'approved.txt');
    const exec = srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${file}` }, srv.agentToken);

    // The queue opens by itself with the card: agent, session, cwd, the command with the match marked.
    const c = card(page, `touch ${file}`);
    await expect(c).toBeVisible(SLOW);
    await expect(c).toContainText('agent');
    await expect(c).toContainText(id);
    await expect(c).toContainText(dir);
    await expect(c.getByTestId('approval-match')).toHaveText('touch ');
    await expect(c).toContainText('Rule 1: /^touch /');
    // The tab, the banner above the terminal and the page title say it waits.
    await expect(tab(page, id)).toHaveAttribute('data-approval', 'waiting');
    await expect(tab(page, id)).toContainText('waits for approval');
    await expect(page.getByTestId('approval-banner')).toContainText(`touch ${file}`);
    await expect(page).toHaveTitle(/^\(1\) ptydeck$/);
    expect(existsSync(file)).toBe(false);
    await screenshot(page, 'approvals-card');

    await c.getByRole('button', { name: 'Approve', exact: true }).click();
    const r = await exec;
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'completed', exit_code: 0 });
    expect(existsSync(file)).toBe(true);
    await expect(page.getByTestId('approval-card')).toHaveCount(0);
    await expect(tab(page, id)).not.toHaveAttribute('data-approval', 'waiting');
    await expect(page).toHaveTitle('ptydeck');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('deny with a reason: the agent gets 403 with it, the file never appears, the terminal says why', async ({ page, srv }) => {
  const dir = scratch();
  try {
    await setPolicy(srv, ASK);
    const id = await agentSession(srv, { cwd: dir });
    await openViewer(page, srv);
    const file = join(dir, 'denied.txt');
    const exec = srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${file}` }, srv.agentToken);
    const c = card(page, `touch ${file}`);
    await expect(c).toBeVisible(SLOW);
    await c.getByRole('button', { name: 'Deny…' }).click();
    await c.getByLabel('Reason for denying').fill('not in this directory');
    await screenshot(page, 'approvals-deny-reason');
    await c.getByRole('button', { name: 'Deny', exact: true }).click();
    const r = await exec;
    expect(r.status).toBe(403);
    expect(r.body.message).toBe('Denied by a person: not in this directory');
    expect(existsSync(file)).toBe(false);
    await tab(page, id).click();
    await expectTerminalToShow(page, id, 'ptydeck: Denied by a person: not in this directory');
    await screenshot(page, 'approvals-denied-terminal');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('raw WebSocket keystrokes: `rm -rf DIR` then Enter; DIR still exists after a deny', async ({ page, srv }) => {
  const dir = scratch();
  const victim = join(dir, 'victim');
  try {
    await setPolicy(srv, ASK);
    const id = await agentSession(srv, { cwd: dir });
    mkdirSync(victim);
    await openViewer(page, srv);
    // The agent's own socket, from the page (any WebSocket client would do).
    await page.evaluate(
      ({ url, keys }) =>
        new Promise<void>((resolve, reject) => {
          const ws = new WebSocket(url);
          ws.onerror = () => reject(new Error('agent socket failed'));
          ws.onmessage = (m) => {
            if (JSON.parse(String(m.data)).type !== 'ready') return;
            for (const k of keys) ws.send(JSON.stringify({ type: 'input', data: k }));
            resolve();
          };
        }),
      { url: `${srv.url.replace(/^http/, 'ws')}/v2/pty/sessions/${id}/ws?api_key=${encodeURIComponent(srv.agentToken)}`, keys: [...`rm -rf ${victim}`, '\r'] },
    );
    const c = card(page, `rm -rf ${victim}`);
    await expect(c).toBeVisible(SLOW);
    await c.getByRole('button', { name: 'Deny…' }).click();
    await c.getByLabel('Reason for denying').fill('keep it');
    await c.getByRole('button', { name: 'Deny', exact: true }).click();
    await tab(page, id).click();
    await expectTerminalToShow(page, id, 'ptydeck: Denied by a person: keep it');
    expect(existsSync(victim)).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Take over denies the command and gives the person the floor; Always allow lets the same command through next time', async ({ page, srv }) => {
  const dir = scratch();
  try {
    await setPolicy(srv, ASK);
    const id = await agentSession(srv, { cwd: dir });
    await openViewer(page, srv);
    const first = srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${dir}/a` }, srv.agentToken);
    await card(page, `touch ${dir}/a`).getByRole('button', { name: 'Take over' }).click();
    expect((await first).status).toBe(403);
    await expect(panel(page)).toBeVisible();
    await expect(page.getByTestId('floor-banner')).toHaveAttribute('data-floor', 'takeover', SLOW);
    await srv.api('POST', `/api/sessions/${id}/release`);

    const command = `touch ${dir}/b`;
    const second = srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command }, srv.agentToken);
    await card(page, command).getByRole('button', { name: 'Always allow' }).click();
    expect((await second).body.data).toMatchObject({ status: 'completed' });
    // The same exact command runs at once now; the policy shows the new rule first.
    expect((await srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command }, srv.agentToken)).body.data).toMatchObject({ status: 'completed' });
    const policy = (await srv.api('GET', '/api/policy')).body;
    expect(policy.rules[0]).toMatchObject({ action: 'allow', agent: 'agent' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a command already waiting when the viewer opens is shown at once, without a notification', async ({ page, srv }) => {
  await page.addInitScript(() => {
    const notes: string[] = [];
    (window as unknown as { __notes: typeof notes }).__notes = notes;
    window.ptydeck = { apiBase: '', token: '', notify: (title: string) => notes.push(title) };
  });
  const dir = scratch();
  try {
    await setPolicy(srv, ASK);
    const id = await agentSession(srv, { cwd: dir });
    const exec = srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${dir}/early` }, srv.agentToken);
    await expect.poll(async () => (await srv.api<{ approvals: unknown[] }>('GET', '/api/approvals')).body.approvals.length, SLOW).toBe(1);
    await openViewer(page, srv);
    const c = card(page, `touch ${dir}/early`);
    await expect(c).toBeVisible(SLOW);
    await c.getByRole('button', { name: 'Approve', exact: true }).click();
    expect((await exec).body.data).toMatchObject({ status: 'completed' });
    expect(await page.evaluate(() => (window as unknown as { __notes: string[] }).__notes)).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the policy is editable in the viewer; a bad rule is refused and marked', async ({ page, srv }) => {
  await openViewer(page, srv);
  await page.getByTestId('approvals-toggle').click();
  await page.getByRole('button', { name: 'Policy…' }).click();
  const editor = page.getByTestId('policy-editor');
  await expect(editor).toBeVisible();
  await editor.getByRole('button', { name: 'Add rule' }).click();
  await editor.getByLabel('Rule 1 pattern').fill('\\bgit\\s+push\\b');
  await editor.getByRole('button', { name: 'Add rule' }).click();
  await editor.getByLabel('Rule 2 pattern').fill('foo(');
  await editor.getByLabel('Rule 2 action').selectOption('deny');
  await editor.getByRole('button', { name: 'Save policy' }).click();
  await expect(editor.getByTestId('policy-error')).toContainText('rules[1] (rule 2): pattern "foo(" is not a valid regular expression');
  await expect(editor.getByTestId('policy-rule').nth(1)).toHaveClass(/policy-rule-error/);
  await screenshot(page, 'approvals-policy-error');
  await editor.getByLabel('Rule 2 pattern').fill('^curl .*\\|\\s*sh');
  await editor.getByLabel('Default').selectOption('ask');
  await editor.getByRole('button', { name: 'Save policy' }).click();
  await expect(editor).toHaveCount(0);
  expect((await srv.api('GET', '/api/policy')).body).toEqual({
    default: 'ask',
    rules: [
      { pattern: '\\bgit\\s+push\\b', action: 'ask' },
      { pattern: '^curl .*\\|\\s*sh', action: 'deny' },
    ],
  });
});

test('a command that starts waiting calls the desktop notifier once, naming the agent and the command', async ({ page, srv }) => {
  await page.addInitScript(() => {
    const notes: { title: string; body: string }[] = [];
    (window as unknown as { __notes: typeof notes }).__notes = notes;
    window.ptydeck = { apiBase: '', token: '', notify: (title: string, body: string) => notes.push({ title, body }) };
  });
  const dir = scratch();
  try {
    await setPolicy(srv, ASK);
    const id = await agentSession(srv, { cwd: dir });
    await openViewer(page, srv);
    const exec = srv.api('POST', `/v2/pty/sessions/${id}/exec`, { command: `touch ${dir}/n` }, srv.agentToken);
    const notes = () => page.evaluate(() => (window as unknown as { __notes: { title: string; body: string }[] }).__notes);
    await expect.poll(notes, SLOW).toEqual([{ title: 'Approve? agent wants to run a command', body: expect.stringContaining(`touch ${dir}/n`) }]);
    await card(page, `touch ${dir}/n`).getByRole('button', { name: 'Approve', exact: true }).click();
    expect((await exec).body.data).toMatchObject({ status: 'completed' });
    expect(await notes()).toHaveLength(1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
