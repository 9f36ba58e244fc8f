import type { BenchServer } from './server';

/** Session chores over the server's REST doors, shared by the cases. */

export async function createSession(srv: BenchServer, id: string, size: { cols?: number; rows?: number } = {}): Promise<string> {
  const res = await srv.api('POST', '/v2/pty/sessions', { id, cols: size.cols ?? 120, rows: size.rows ?? 40 });
  if (res.status !== 200 || !res.body?.success) throw new Error(`create ${id}: ${res.status} ${JSON.stringify(res.body)}\n${srv.log()}`);
  return res.body.data.session_id as string;
}

/** An execd session: created lazily, its shell starts on the first socket. */
export async function createExecdSession(srv: BenchServer): Promise<string> {
  const res = await srv.api('POST', '/pty', {});
  if (res.status !== 201) throw new Error(`POST /pty: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session_id as string;
}

export async function closeSession(srv: BenchServer, id: string): Promise<void> {
  await srv.api('DELETE', `/v2/pty/sessions/${encodeURIComponent(id)}`).catch(() => undefined);
}

/** Types text into the session as an agent would (AIO v2 input, verbatim). */
export async function typeInto(srv: BenchServer, id: string, text: string): Promise<void> {
  const res = await srv.api('POST', `/v2/pty/sessions/${encodeURIComponent(id)}/input`, { input: text });
  if (res.status !== 200 || !res.body?.success) throw new Error(`input ${id}: ${res.status} ${JSON.stringify(res.body)}`);
}

/** Resolves once the shell sits at its prompt (the server learned it from the shell's own markers). */
export async function waitForPrompt(srv: BenchServer, id: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await srv.api('GET', `/api/sessions/${encodeURIComponent(id)}`);
    if (res.status === 200 && res.body?.shellState === 'prompt') return;
    if (Date.now() > deadline) throw new Error(`session ${id} never came back to its prompt (last: ${JSON.stringify(res.body)})`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Lets a person's keys in (the viewer socket and a person's `send` need it; sessions start in watch). */
export async function setFloor(srv: BenchServer, id: string, mode: 'watch' | 'type' | 'takeover'): Promise<void> {
  const res = await srv.api('POST', `/api/sessions/${encodeURIComponent(id)}/floor`, { mode });
  if (res.status !== 200) throw new Error(`floor ${id}: ${res.status} ${JSON.stringify(res.body)}`);
}

/** `true` through AIO v2 exec; returns the milliseconds the call took, or throws on a failed call. */
export async function execTrue(srv: BenchServer, id: string): Promise<void> {
  const res = await srv.api('POST', `/v2/pty/sessions/${encodeURIComponent(id)}/exec`, { command: 'true' });
  if (res.status !== 200 || res.body?.data?.status !== 'completed' || res.body?.data?.exit_code !== 0) {
    throw new Error(`exec true on ${id}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  }
}
