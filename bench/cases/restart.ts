import type WebSocket from 'ws';
import { type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { closeSocket, openSocket } from '../lib/doors';
import { writePayload } from '../lib/payload';
import { closeSession, createExecdSession, createSession, typeInto, waitForPrompt } from '../lib/sessions';
import { startServer, type BenchServer } from '../lib/server';
import { median, MiB, nowMs } from '../lib/stats';
import { describeFailure, finishWithin, StreamCheck } from '../lib/stream-check';
import { fmtMs, fmtRatio, type Row } from '../lib/table';

/**
 * Case 7, the PTY host across a server crash. A server holds N sessions (each with some output in its
 * log) while one of them streams a file to an execd client; the server is killed with SIGKILL mid-
 * stream and started again on the same home. Measured: the time from starting the new server until it
 * answers with every session listed (their logs replayed from the host), and the bytes the client lost
 * when it resumed from the offset it had reached (checked by length and CRC, as in case 1: must be 0).
 * Baseline: starting a server on a fresh home (no sessions) until it answers, on the same machine.
 */
const CASE = '7. Restart (PTY host)';

interface Round {
  restartMs: number;
  coldMs: number;
  lostBytes: number;
  ok: boolean;
  note?: string;
}

export const restartCase: BenchCase = {
  id: 'restart',
  title: 'Restart with the PTY host',
  async run(ctx: CaseContext): Promise<CaseOutcome> {
    const sessions = ctx.quick ? 4 : 20;
    const rounds = ctx.quick ? 1 : 3;
    const payload = writePayload(ctx.workDir, (ctx.quick ? 4 : 64) * MiB, 11);
    const results: Round[] = [];
    for (let r = 0; r < rounds; r++) {
      const res = await oneRound(sessions, payload);
      ctx.log(`  restart with ${sessions} sessions: ${res.restartMs.toFixed(0)} ms (cold start ${res.coldMs.toFixed(0)} ms); lost ${res.lostBytes} bytes${res.note ? ` (${res.note})` : ''}`);
      results.push(res);
    }
    const bad = results.filter((x) => !x.ok);
    const rows: Row[] = [
      {
        case: CASE,
        figure: `server SIGKILLed mid-stream with ${sessions + 1} sessions, started again: until it answers with every session back (baseline: a server starting on a fresh home)`,
        ours: fmtMs(median(results.map((x) => x.restartMs))),
        baseline: fmtMs(median(results.map((x) => x.coldMs))),
        ratio: fmtRatio(median(results.map((x) => x.restartMs / x.coldMs))),
      },
      {
        case: CASE,
        figure: `bytes lost by an execd client resuming from its offset (${payload.fileBytes / MiB} MiB \`cat\`, every byte checked)`,
        ours: bad.length ? `FAILED: ${bad.map((x) => x.note).join('; ')}` : String(Math.max(...results.map((x) => x.lostBytes))),
        baseline: '0',
        ratio: '—',
      },
    ];
    return { rows, notes: bad.map((x) => `${CASE}: ${x.note}`) };
  },
};

async function oneRound(sessions: number, payload: ReturnType<typeof writePayload>): Promise<Round> {
  let srv: BenchServer = await startServer();
  try {
    const ids: string[] = [];
    for (let i = 0; i < sessions; i++) ids.push(await createSession(srv, `rs-${i}`));
    // Some output in every log, so the restart has something to replay.
    for (const id of ids) await typeInto(srv, id, 'seq 1 20000\r');
    for (const id of ids) await waitForPrompt(srv, id);

    const streamer = await createExecdSession(srv);
    const check = new StreamCheck(payload);
    let offset = 0;
    let gap: string | null = null;
    const onFrame = (buf: Buffer, isBinary: boolean): void => {
      if (!isBinary) return;
      let data: Buffer;
      if (buf[0] === 0x03) {
        const at = Number(buf.readBigUInt64BE(1));
        if (at !== offset) gap ??= `resumed at ${at}, expected ${offset}`;
        data = buf.subarray(9);
      } else data = buf.subarray(1);
      offset += data.length;
      check.feed(data);
    };
    const attach = async (s: BenchServer): Promise<WebSocket> => openSocket(s.wsUrl(`/pty/${encodeURIComponent(streamer)}/ws`, { since: String(offset) }), onFrame);
    let ws = await attach(srv);
    await waitForPrompt(srv, streamer);
    await typeInto(srv, streamer, `cat '${payload.path}'\r`);
    // Mid-stream: once a few MiB are through.
    const deadline = Date.now() + 60_000;
    while (offset < Math.min(4 * MiB, payload.fileBytes / 4) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await srv.crash();
    await closeSocket(ws);

    const t0 = nowMs();
    srv = await startServer({}, [], { home: srv.home, cwd: srv.cwd });
    let listed = 0;
    while (listed < sessions + 1) {
      const res = await srv.api('GET', '/v2/pty/sessions');
      listed = Object.keys(res.body?.data?.sessions ?? {}).length;
      if (listed < sessions + 1) await new Promise((r) => setTimeout(r, 5));
    }
    const restartMs = nowMs() - t0;
    ws = await attach(srv);
    let note: string | undefined;
    try {
      await finishWithin(check, 120_000, 'resumed execd client');
    } catch (err) {
      note = (err as Error).message;
    }
    await closeSocket(ws);
    const result = check.result();
    if (!result.ok) note ??= describeFailure(result);
    if (gap) note = `${note ? `${note}; ` : ''}${gap}`;
    const lostBytes = result.ok && !gap ? 0 : Math.max(0, result.expectedBytes - result.bytes);
    for (const id of [...ids, streamer]) await closeSession(srv, id);

    const c0 = nowMs();
    const cold = await startServer();
    const coldMs = nowMs() - c0;
    await cold.stop();
    return { restartMs, coldMs, lostBytes, ok: !note, note };
  } finally {
    await srv.stop();
  }
}
