import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from './helpers';

/**
 * POST /v1/shell/exec and /v1/shell/view with `Accept: text/event-stream`, as AIO's OpenAPI file offers
 * them. Streaming is shown causally, not by timing: each command waits for a gate file that this test
 * creates only after it has received the output printed before the gate. A server that answered at the
 * end would never get past the gate.
 */
let srv: TestServer;
let tmp: string;
beforeAll(async () => {
  srv = await startTestServer();
  tmp = mkdtempSync(join(tmpdir(), 'ptydeck-sse-'));
});
afterAll(async () => {
  // Explicitly created sessions are durable on the tmux backend: end them, not only the server.
  await srv.app.manager.closeAll();
  await srv.close();
  rmSync(tmp, { recursive: true, force: true });
});

type SseEvent = { comment: string } | { data: any };

/** Opens an SSE request and hands each event to `onEvent` as it arrives; resolves with all of them at the end. */
async function sse(path: string, body: unknown, onEvent: (e: SseEvent, all: SseEvent[]) => void = () => undefined, token = srv.token) {
  const res = await fetch(srv.url + path, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify(body),
  });
  const events: SseEvent[] = [];
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) return { res, events, json: await res.json() };
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const e: SseEvent = block.startsWith(':') ? { comment: block.slice(1).trim() } : { data: JSON.parse(block.replace(/^data: /, '')) };
      events.push(e);
      onEvent(e, events);
    }
  }
  return { res, events, json: null };
}

const outputs = (events: SseEvent[]): string[] => events.flatMap((e) => ('data' in e && typeof e.data.output === 'string' ? [e.data.output] : []));

test('an exec that prints over two seconds arrives as several events before the final one', async () => {
  const gate = join(tmp, 'exec-gate');
  const sid = (await srv.api('POST', '/v1/shell/sessions/create', { exec_dir: tmp })).body.data.session_id;
  const command = `echo tick-1; sleep 0.5; echo tick-2; until [ -e ${gate} ]; do sleep 0.05; done; echo tick-3; sleep 0.5; printf tick-4`;
  const { res, events } = await sse('/v1/shell/exec', { id: sid, command }, (_e, all) => {
    if (outputs(all).join('').includes('tick-2\n')) writeFileSync(gate, '');
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(events[0]).toEqual({ comment: 'connected' });
  const last = events[events.length - 1];
  expect(outputs(events).join('')).toBe('tick-1\ntick-2\ntick-3\ntick-4');
  // The output came as it was printed: at least the part before the gate and the part after it.
  const beforeEnd = events.slice(0, -1).filter((e) => 'data' in e && 'output' in e.data);
  expect(beforeEnd.length).toBeGreaterThanOrEqual(2);
  expect('data' in last && last.data).toEqual({
    end: true,
    message: 'No more output',
    result: {
      success: true,
      message: 'Command executed',
      data: {
        session_id: sid,
        command,
        status: 'completed',
        output: 'tick-1\ntick-2\ntick-3\ntick-4',
        console: [{ ps1: '$ ', command, output: 'tick-1\ntick-2\ntick-3\ntick-4' }],
        exit_code: 0,
      },
    },
  });
});

test('async_mode streams until the command ends too; a timeout ends the stream with running', async () => {
  const gate = join(tmp, 'async-gate');
  const { events } = await sse('/v1/shell/exec', { command: `echo a; until [ -e ${gate} ]; do sleep 0.05; done; echo b`, async_mode: true }, (_e, all) => {
    if (outputs(all).join('').includes('a\n')) writeFileSync(gate, '');
  });
  expect(outputs(events).join('')).toBe('a\nb\n');
  const end = events[events.length - 1] as { data: any };
  expect(end.data.result.data).toMatchObject({ status: 'completed', exit_code: 0, output: 'a\nb' });

  const timed = await sse('/v1/shell/exec', { command: 'echo started; sleep 30', timeout: 0.5 });
  const tEnd = timed.events[timed.events.length - 1] as { data: any };
  expect(outputs(timed.events).join('')).toBe('started\n');
  expect(tEnd.data.result).toMatchObject({ message: 'Command still running (timeout 0.5s reached)', data: { status: 'running', output: null } });
  await srv.api('POST', '/v1/shell/kill', { id: tEnd.data.result.data.session_id });
});

test('view streams the running command from its start, then ends with the view', async () => {
  const gate = join(tmp, 'view-gate');
  const sid = (await srv.api('POST', '/v1/shell/sessions/create', { exec_dir: tmp })).body.data.session_id;
  await srv.api('POST', '/v1/shell/exec', { id: sid, command: `echo early; until [ -e ${gate} ]; do sleep 0.05; done; echo late`, async_mode: true });
  const { events } = await sse('/v1/shell/view', { id: sid }, (_e, all) => {
    if (outputs(all).join('').includes('early\n')) writeFileSync(gate, '');
  });
  expect(outputs(events).join('')).toBe('early\nlate\n');
  const end = events[events.length - 1] as { data: any };
  expect(end.data).toMatchObject({ end: true, message: 'No more output', result: { success: true, data: { session_id: sid, status: 'completed', output: 'early\nlate', exit_code: 0 } } });
  // With nothing running, a view stream is the plain view's output and the end at once.
  const idle = await sse('/v1/shell/view', { id: sid });
  expect(idle.events.map((e) => ('comment' in e ? ':' : Object.keys(e.data)[0]))).toEqual([':', 'output', 'end']);
});

test('refusals known before streaming are plain JSON errors with their status', async () => {
  const unknown = await sse('/v1/shell/exec', { id: 'no-such-session', command: 'true' });
  expect(unknown.res.status).toBe(404);
  expect(unknown.json).toMatchObject({ success: false, message: 'Session not found' });
  const invalid = await sse('/v1/shell/view', {});
  expect(invalid.res.status).toBe(422);
  // The floor refuses an agent (the person's own credential it never refuses).
  const agent = (await srv.api('POST', '/api/tokens', { name: 'sse-agent' })).body.token;
  const sid = (await srv.api('POST', '/v1/shell/sessions/create', { exec_dir: tmp }, { token: agent })).body.data.session_id;
  await srv.api('POST', `/api/sessions/${sid}/takeover`);
  const held = await sse('/v1/shell/exec', { id: sid, command: 'true' }, undefined, agent);
  expect(held.res.status).toBe(423);
  expect(held.json.message).toMatch(/A person has taken control/);
  await srv.api('POST', `/api/sessions/${sid}/release`);
  await srv.api('POST', '/v1/shell/exec', { id: sid, command: 'sleep 30', async_mode: true }, { token: agent });
  const busy = await sse('/v1/shell/exec', { id: sid, command: 'true' }, undefined, agent);
  expect(busy.res.status).toBe(400);
  expect(busy.json.message).toBe('Session already has a running command');
  await srv.api('POST', '/v1/shell/kill', { id: sid }, { token: agent });
});
