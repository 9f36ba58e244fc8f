import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RecordingInfo, TimelineEvent, TimelinePage } from '../src/shared/timeline';
import { loadConfig } from '../src/main/config';
import { startPtydeck, type Ptydeck } from '../src/main/app';
import { startTestServer, until, type TestServer } from './helpers';
import { WsClient } from './ws-client';

/**
 * The timeline and recordings with real shells: who did what, in order, through real doors; the files
 * a restart leaves; what asciinema makes of a recording; and a password that never reaches either.
 */
let srv: TestServer;
let claude: string;
let gemini: string;
beforeAll(async () => {
  srv = await startTestServer();
  claude = (await srv.api('POST', '/api/tokens', { name: 'claude' })).body.token;
  gemini = (await srv.api('POST', '/api/tokens', { name: 'gemini' })).body.token;
});
afterAll(async () => {
  await srv.close();
});

const asAgent = (token: string, method: string, path: string, body?: unknown) => srv.api(method, path, body, { token });

async function agentSession(token = claude): Promise<string> {
  const res = await asAgent(token, 'POST', '/v2/pty/sessions', { cwd: '/tmp', cols: 80, rows: 24 });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.session_id as string;
}

async function timelineOf(id: string, token?: string): Promise<TimelineEvent[]> {
  const res = await srv.api<TimelinePage>('GET', `/api/sessions/${id}/timeline`, undefined, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.events;
}

/** Polls the timeline until `pred` holds (events are written a few ms after they happen). */
async function timelineUntil(id: string, pred: (events: TimelineEvent[]) => boolean): Promise<TimelineEvent[]> {
  let events: TimelineEvent[] = [];
  await until(async () => pred((events = await timelineOf(id))), 10000);
  return events;
}

/** Whether `parent` has a child process named `name` (/proc). */
function childNamed(parent: number, name: string): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && comm === name) return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

describe('who did what', () => {
  test("an agent's exec and a person's typing in the viewer appear with the right who and door", async () => {
    const id = await agentSession();
    const exec = await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo agent-$((20+1))' });
    expect(exec.body.data.output).toBe('agent-21');

    expect((await srv.api('POST', `/api/sessions/${id}/floor`, { mode: 'type' })).status).toBe(200);
    const view = await WsClient.open(`${srv.wsUrl}/api/sessions/${id}/view?api_key=${srv.token}`);
    await view.nextJson('snapshot');
    for (const ch of 'echo person-$((40+2))\r') view.sendJson({ type: 'input', data: ch });
    await view.waitForOutput('person-42');
    view.ws.close();

    const events = await timelineUntil(id, (es) => es.some((e) => e.kind === 'command-ended' && e.who === 'person'));
    const created = events.find((e) => e.kind === 'created')!;
    expect(created).toMatchObject({ who: 'claude', owner: 'claude', session: id, door: 'aio-v2', offset: 0 });

    const agentInput = events.find((e) => e.kind === 'input' && e.who === 'claude');
    expect(agentInput).toMatchObject({ door: 'aio-v2', command: 'echo agent-$((20+1))', hidden: false });
    const agentStarted = events.find((e) => e.kind === 'command-started' && e.who === 'claude');
    expect(agentStarted).toMatchObject({ command: 'echo agent-$((20+1))', source: 'exec' });
    expect(events.find((e) => e.kind === 'command-ended' && e.who === 'claude')).toMatchObject({ exitCode: 0 });

    expect(events.find((e) => e.kind === 'floor')).toMatchObject({ mode: 'type', who: 'person', door: 'native' });
    const personKeys = events.filter((e) => e.kind === 'input' && e.who === 'person');
    expect(personKeys.every((e) => e.door === 'viewer')).toBe(true);
    expect(personKeys.map((e) => (e.kind === 'input' ? e.text : '')).join('')).toBe('echo person-$((40+2))\r');
    expect(events.find((e) => e.kind === 'command-started' && e.who === 'person')).toMatchObject({ command: 'echo person-$((40+2))', source: 'typed' });
    expect(events.find((e) => e.kind === 'command-ended' && e.who === 'person')).toMatchObject({ exitCode: 0 });

    // Offsets only grow, and seq orders the events.
    for (let i = 1; i < events.length; i++) {
      expect(events[i].seq).toBeGreaterThan(events[i - 1].seq);
      expect(events[i].offset).toBeGreaterThanOrEqual(events[i - 1].offset);
    }
  });

  test('a take over, a refused agent input, a signal and an exit appear in that order', async () => {
    const id = await agentSession();
    expect((await srv.api('POST', `/api/sessions/${id}/takeover`)).status).toBe(200);
    const refused = await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/input`, { input: 'echo never\r' });
    expect(refused.status).toBe(423);
    expect((await srv.api('POST', `/api/sessions/${id}/release`)).status).toBe(200);
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'sleep 30', async: true });
    await until(async () => (await srv.api('GET', `/api/sessions/${id}`)).body.shellState === 'busy');
    // Busy comes a moment before `sleep` does (in an agent's bash the approval hook asks first): signal it once it runs.
    const shell = srv.app.manager.get(id)!.pid!;
    await until(() => childNamed(shell, 'sleep'));
    const sig = await asAgent(claude, 'POST', `/api/sessions/${id}/signal`, { signal: 'SIGINT' });
    expect(sig.body.delivered).toBe(true);
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/input`, { input: 'exit 3\r' });

    const events = await timelineUntil(id, (es) => es.some((e) => e.kind === 'exit'));
    const order = events.filter((e) => ['floor', 'refused', 'signal', 'exit'].includes(e.kind));
    expect(order.map((e) => [e.kind, e.who])).toEqual([
      ['floor', 'person'],
      ['refused', 'claude'],
      ['floor', 'person'],
      ['signal', 'claude'],
      ['exit', 'ptydeck'],
    ]);
    expect(order[0]).toMatchObject({ mode: 'takeover' });
    expect(order[1]).toMatchObject({ action: 'input', door: 'aio-v2' });
    expect(order[2]).toMatchObject({ mode: 'watch' });
    expect(order[3]).toMatchObject({ signal: 'SIGINT', delivered: true, door: 'native' });
    expect(order[4]).toMatchObject({ exitCode: 3 });
    // The refused keys never became input.
    expect(events.some((e) => e.kind === 'input' && e.text.includes('never'))).toBe(false);
  });
});

test("a bash-API session's commands, output, refusals and close are on its timeline like a terminal's", async () => {
  const first = await asAgent(claude, 'POST', '/v1/bash/exec', { command: 'echo bash-$((3+4)); echo oops >&2; exit 2' });
  expect(first.status, JSON.stringify(first.body)).toBe(200);
  const id: string = first.body.data.session_id;
  expect((await srv.api('POST', `/api/sessions/${id}/takeover`)).status).toBe(200);
  expect((await asAgent(claude, 'POST', '/v1/bash/exec', { session_id: id, command: 'echo never' })).status).toBe(423);
  expect((await srv.api('POST', `/api/sessions/${id}/release`)).status).toBe(200);
  expect((await asAgent(claude, 'POST', `/v1/bash/sessions/${id}/close`)).status).toBe(200);

  const events = await timelineUntil(id, (es) => es.some((e) => e.kind === 'closed'));
  expect(events[0]).toMatchObject({ kind: 'created', who: 'claude', door: 'aio-bash', offset: 0 });
  expect(events.find((e) => e.kind === 'input')).toMatchObject({ who: 'claude', door: 'aio-bash', command: 'echo bash-$((3+4)); echo oops >&2; exit 2' });
  expect(events.find((e) => e.kind === 'command-started')).toMatchObject({ who: 'claude', command: 'echo bash-$((3+4)); echo oops >&2; exit 2', source: 'exec' });
  const ended = events.find((e) => e.kind === 'command-ended')!;
  expect(ended).toMatchObject({ who: 'claude', exitCode: 2 });
  // The output (stdout, stderr and the transcript) came before the end, and offsets count it.
  expect(ended.offset).toBeGreaterThan('bash-7\noops\n'.length);
  expect(events.find((e) => e.kind === 'refused')).toMatchObject({ who: 'claude', door: 'aio-bash', action: 'exec' });
  expect(events.some((e) => e.kind === 'input' && e.text.includes('never'))).toBe(false);
  expect(events.find((e) => e.kind === 'closed')).toMatchObject({ who: 'claude', door: 'aio-bash' });
});

describe('approvals', () => {
  test('a command asked about, approved, and one denied appear with who decided and why', async () => {
    await srv.api('PUT', '/api/policy', { default: 'allow', rules: [{ pattern: '^echo gated-', action: 'ask' }, { pattern: '^echo forbidden', action: 'deny' }] });
    try {
      const id = await agentSession();
      const pending = async () => until(async () => ((await srv.api('GET', '/api/approvals')).body.approvals as any[]).find((a) => a.session_id === id), 15000);
      const yes = asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo gated-yes' });
      await srv.api('POST', `/api/approvals/${(await pending()).id}/approve`, { note: 'looks fine' });
      expect((await yes).status).toBe(200);
      const no = asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo gated-no' });
      await srv.api('POST', `/api/approvals/${(await pending()).id}/deny`, { reason: 'not now' });
      expect((await no).status).toBe(403);
      expect((await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo forbidden' })).status).toBe(403);
      const approvals = (await timelineUntil(id, (ev) => ev.filter((e) => e.kind === 'approval').length >= 5)).filter((e) => e.kind === 'approval');
      expect(approvals.map((e) => e.kind === 'approval' && [e.who, e.decision, e.command, e.reason ?? null])).toEqual([
        ['claude', 'requested', 'echo gated-yes', null],
        ['person', 'approved', 'echo gated-yes', 'looks fine'],
        ['claude', 'requested', 'echo gated-no', null],
        ['person', 'denied', 'echo gated-no', 'not now'],
        ['ptydeck', 'denied', 'echo forbidden', expect.stringContaining('Denied by the approval policy: rule 2')],
      ]);
      expect(approvals[0].door).toBe('aio-v2');
    } finally {
      await srv.api('PUT', '/api/policy', { default: 'allow', rules: [] });
    }
  });
});

describe('secrets stay out', () => {
  test('input typed at `read -s` is [hidden: N bytes] in the timeline and the recording; other input is kept', async () => {
    const id = await agentSession();
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'read -s PW; echo "got ${#PW} chars"', async: true });
    // The terminal stops echoing once `read -s` waits: only then is the password typed.
    await until(async () => (await srv.api('GET', `/api/sessions/${id}`)).body.waitingForInput === true);
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/input`, { input: 'hunter2-sekrit\r' });
    await until(async () => (await srv.api('GET', `/v2/pty/sessions/${id}/screen`)).body.data.output.includes('got 14 chars'));
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo visible-after' });

    const events = await timelineUntil(id, (es) => es.some((e) => e.kind === 'input' && e.text.includes('visible-after')));
    const hidden = events.filter((e) => e.kind === 'input' && e.hidden);
    expect(hidden).toHaveLength(1);
    expect(hidden[0]).toMatchObject({ text: '[hidden: 15 bytes]', bytes: 15, who: 'claude' });
    expect(JSON.stringify(events)).not.toContain('hunter2');

    const cast = await srv.api('GET', `/api/sessions/${id}/recording`);
    expect(cast.status).toBe(200);
    const text = String(cast.body);
    expect(text).toContain('"i","[hidden: 15 bytes]"');
    expect(text).toContain('visible-after');
    expect(text).not.toContain('hunter2');
    // Nor on disk, anywhere in the timeline's or the recordings' files.
    for (const dir of ['timeline', 'recordings']) for (const f of readdirSync(join(srv.home, dir))) expect(readFileSync(join(srv.home, dir, f), 'utf8')).not.toContain('hunter2');
  });

  test('the timeline and recording files are 0600 in 0700 directories', async () => {
    const id = await agentSession();
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'true' });
    await timelineUntil(id, (es) => es.some((e) => e.kind === 'command-ended'));
    for (const dir of ['timeline', 'recordings']) {
      expect(statSync(join(srv.home, dir)).mode & 0o777).toBe(0o700);
      const files = readdirSync(join(srv.home, dir));
      expect(files.length).toBeGreaterThan(0);
      for (const f of files) expect((statSync(join(srv.home, dir, f)).mode & 0o777).toString(8)).toBe('600');
    }
  });
});

describe('who may see what', () => {
  test("another agent gets 404 for a session's timeline and recording, live and closed; /api/audit shows each agent its own", async () => {
    const id = await agentSession(claude);
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: 'echo mine' });
    const other = await agentSession(gemini);
    for (const closed of [false, true]) {
      if (closed) expect((await asAgent(claude, 'DELETE', `/api/sessions/${id}`)).status).toBe(200);
      expect((await asAgent(gemini, 'GET', `/api/sessions/${id}/timeline`)).status).toBe(404);
      expect((await asAgent(gemini, 'GET', `/api/sessions/${id}/recording`)).status).toBe(404);
      expect((await asAgent(claude, 'GET', `/api/sessions/${id}/timeline`)).status).toBe(200);
      expect((await asAgent(claude, 'GET', `/api/sessions/${id}/recording`)).status).toBe(200);
    }
    const claudes = (await asAgent(claude, 'GET', '/api/recordings')).body.recordings as RecordingInfo[];
    const key = claudes.find((r) => r.session === id)!.key;
    expect(claudes.every((r) => r.owner === 'claude')).toBe(true);
    expect(((await asAgent(gemini, 'GET', '/api/recordings')).body.recordings as RecordingInfo[]).some((r) => r.session === id)).toBe(false);
    expect((await asAgent(gemini, 'GET', `/api/recordings/${key}`)).status).toBe(404);
    expect((await asAgent(gemini, 'GET', `/api/recordings/${key}/timeline`)).status).toBe(404);
    // Only the person deletes recordings: the record of an agent's work is not the agent's to erase.
    expect((await asAgent(claude, 'DELETE', `/api/recordings/${key}`)).status).toBe(403);

    const geminiAudit = (await asAgent(gemini, 'GET', '/api/audit')).body as TimelinePage;
    expect(geminiAudit.events.length).toBeGreaterThan(0);
    expect(geminiAudit.events.every((e) => e.owner === 'gemini')).toBe(true);
    expect(geminiAudit.events.some((e) => e.session === other)).toBe(true);
    expect(((await asAgent(gemini, 'GET', '/api/audit?agent=claude')).body as TimelinePage).events).toEqual([]);
    const person = (await srv.api('GET', '/api/audit?agent=claude')).body as TimelinePage;
    expect(person.events.some((e) => e.session === id && e.kind === 'closed')).toBe(true);
    expect(person.events.every((e) => e.owner === 'claude')).toBe(true);
    // `since` pages forward.
    const cut = person.events[person.events.length - 2].seq;
    const later = (await srv.api('GET', `/api/audit?since=${cut}`)).body as TimelinePage;
    expect(later.events.every((e) => e.seq > cut)).toBe(true);
    expect(later.events.some((e) => e.seq === person.events[person.events.length - 1].seq)).toBe(true);
    expect((await srv.api('GET', '/api/audit?since=yesterday')).status).toBe(400);

    // The person deletes a closed session's recording; a live one's is refused.
    expect((await srv.api('DELETE', `/api/recordings/${key}`)).status).toBe(200);
    expect((await srv.api('GET', `/api/recordings/${key}`)).status).toBe(404);
    const liveKey = ((await srv.api('GET', '/api/recordings')).body.recordings as RecordingInfo[]).find((r) => r.session === other)!.key;
    expect((await srv.api('DELETE', `/api/recordings/${liveKey}`)).status).toBe(409);
  });
});

describe('recordings', () => {
  test('`asciinema cat` of a recording prints exactly what the session printed, multi-byte characters included', async (ctx) => {
    if (!existsSync('/usr/bin/asciinema')) ctx.skip(); // Debian's asciinema package; .ci/run installs it
    const id = await agentSession();
    // Enough multi-byte text that PTY reads cut characters in two, several times over.
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: `python3 -c "import sys; sys.stdout.write('☃é漢🎉' * 40000 + '\\n')"` });
    await asAgent(claude, 'POST', `/v2/pty/sessions/${id}/exec`, { command: "printf 'colour: \\033[31mred\\033[0m done\\n'" });
    const session = srv.app.manager.get(id)!;
    expect((await asAgent(claude, 'DELETE', `/api/sessions/${id}`)).status).toBe(200);
    const printed = session.log.read(0);
    expect(session.log.start).toBe(0);

    const cast = await fetch(`${srv.url}/api/sessions/${id}/recording`, { headers: { Authorization: `Bearer ${srv.token}` } });
    expect(cast.headers.get('content-type')).toMatch(/^application\/x-asciicast/);
    const dir = mkdtempSync(join(tmpdir(), 'ptydeck-cast-'));
    try {
      const file = join(dir, 'session.cast');
      writeFileSync(file, Buffer.from(await cast.arrayBuffer()));
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const header = JSON.parse(lines[0]);
      expect(header).toMatchObject({ version: 2, width: 80, height: 24, ptydeck: { session: id, owner: 'claude' } });
      expect(Number.isInteger(header.timestamp)).toBe(true);
      expect(lines.slice(1).every((l) => ['o', 'i', 'r', 'm'].includes(JSON.parse(l)[1]))).toBe(true);
      expect(lines.some((l) => JSON.parse(l)[1] === 'm' && JSON.parse(l)[2].startsWith('python3'))).toBe(true);
      // asciinema cat reads /dev/tty, so it runs on a terminal of its own; it puts that terminal in raw
      // mode, so its bytes arrive untranslated.
      const out = await runOnTerminal('/usr/bin/asciinema', ['cat', file]);
      expect(out.length).toBe(printed.length);
      expect(out.equals(printed)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function runOnTerminal(file: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve) => {
    const p = pty.spawn(file, args, { cols: 80, rows: 24, encoding: null } as pty.IPtyForkOptions);
    const chunks: Buffer[] = [];
    let lastData = Date.now();
    p.onData((d: string | Buffer) => {
      chunks.push(typeof d === 'string' ? Buffer.from(d) : d);
      lastData = Date.now();
    });
    // The exit may be seen before the terminal's last bytes are read (a loaded machine): done once
    // nothing more has come for a while after it.
    p.onExit(() => {
      const settle = setInterval(() => {
        if (Date.now() - lastData < 500) return;
        clearInterval(settle);
        resolve(Buffer.concat(chunks));
      }, 100);
    });
  });
}

describe('after a restart', () => {
  let home: string;
  let app: Ptydeck | null = null;
  const start = async () => (app = await startPtydeck(loadConfig({ port: '0' }, { ...process.env, PTYDECK_TOKEN: 'restart-test-admin-token-0123456789', AIO_SHELL_BACKEND: 'native', PTYDECK_HOME: home })));
  // The sessions are an agent's (the admin acting as one): a person's own shell would load root's rc
  // files, which on a loaded machine can take longer than a shell may take to start.
  const AS_AGENT = { Authorization: 'Bearer restart-test-admin-token-0123456789', 'Content-Type': 'application/json', 'X-Ptydeck-Agent': 'restarter' };
  const call = async (method: string, path: string, headers: Record<string, string> = { Authorization: 'Bearer restart-test-admin-token-0123456789' }) => {
    const res = await fetch(app!.server.url + path, { method, headers });
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) };
  };
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'ptydeck-restart-'));
  });
  afterAll(async () => {
    await app?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  test("the timeline and a closed session's recording are still there, and a reused id starts a new life", async () => {
    await start();
    const open = await fetch(app!.server.url + '/api/sessions', {
      method: 'POST',
      headers: AS_AGENT,
      body: JSON.stringify({ id: 'survivor', cwd: '/tmp' }),
    });
    expect(open.status, await open.clone().text()).toBe(200);
    const exec = await fetch(app!.server.url + '/api/sessions/survivor/exec', {
      method: 'POST',
      headers: AS_AGENT,
      body: JSON.stringify({ command: 'echo before-restart' }),
    });
    expect((await exec.json()).output).toBe('before-restart');
    expect((await call('DELETE', '/api/sessions/survivor', AS_AGENT)).status).toBe(200);
    const before = (await call('GET', '/api/sessions/survivor/timeline')).json() as TimelinePage & { run: string };
    await app!.stop();
    app = null;

    await start();
    const after = (await call('GET', '/api/sessions/survivor/timeline')).json() as TimelinePage & { run: string; live: boolean };
    expect(after.run).toBe(before.run);
    expect(after.live).toBe(false);
    expect(after.events.map((e) => e.kind)).toEqual(before.events.map((e) => e.kind));
    expect(after.events.at(-1)!.kind).toBe('closed');
    const list = (await call('GET', '/api/recordings')).json().recordings as RecordingInfo[];
    expect(list.find((r) => r.key === before.run)).toMatchObject({ session: 'survivor', owner: 'restarter', live: false });
    const cast = await call('GET', '/api/sessions/survivor/recording');
    expect(cast.status).toBe(200);
    expect(cast.text).toContain('before-restart');
    // New events continue the numbering.
    const audit = (await call('GET', '/api/audit')).json() as TimelinePage;
    expect(audit.next).toBe(before.events.at(-1)!.seq);

    // The same id opened again is a new life: its own timeline and recording; the old one stays reachable by key.
    const reopened = await fetch(app!.server.url + '/api/sessions', {
      method: 'POST',
      headers: AS_AGENT,
      body: JSON.stringify({ id: 'survivor', cwd: '/tmp' }),
    });
    expect(reopened.status, await reopened.clone().text()).toBe(200);
    const now = (await call('GET', '/api/sessions/survivor/timeline')).json() as TimelinePage & { run: string; live: boolean };
    expect(now.run).not.toBe(before.run);
    expect(now.live).toBe(true);
    expect(now.events[0]).toMatchObject({ kind: 'created', seq: before.events.at(-1)!.seq + 1 });
    const old = (await call('GET', `/api/recordings/${before.run}/timeline`)).json() as TimelinePage;
    expect(old.events.map((e) => e.seq)).toEqual(before.events.map((e) => e.seq));
  });
});

test('the asciinema CLI is where .ci/run puts it', () => {
  // Not a test of ptydeck: a reminder, failing loudly, if the machine lacks what the recording test needs.
  if (!process.env.CI) return;
  expect(execFileSync('/usr/bin/asciinema', ['--version'], { encoding: 'utf8' })).toMatch(/asciinema/);
});
