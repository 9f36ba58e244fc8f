import { createServer, type Server, type Socket } from 'node:net';
import type WebSocket from 'ws';
import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { onCleanup } from '../lib/cleanup';
import { closeSocket, openSocket } from '../lib/doors';
import { EchoProbe } from '../lib/echo-probe';
import { closeSession, createSession, setFloor, waitForPrompt } from '../lib/sessions';
import { startServer, type BenchServer } from '../lib/server';
import { median, nowMs, pairedRatio } from '../lib/stats';
import { fmtMs, fmtRatio, latencyRows, type Row } from '../lib/table';

/**
 * Case 8, one deck, many machines: a deck with 5 ptydeck remotes of 20 sessions each (100 in all), every
 * server a separate process on this machine.
 *   - Time until the deck's GET /api/sessions lists all 100 after the 5 remotes are added (at once),
 *     against fetching the 5 remotes' own listings directly, in parallel: the least the deck must do.
 *   - The deck's listing, asked one request after another, with all 100 listed, and again with a sixth
 *     remote that accepts connections and never answers: one bad remote must not slow the listing.
 *     Against one remote's own listing of its 20.
 *   - Keystroke echo through the deck's view socket, relayed to a remote's view socket, against the
 *     remote's view socket directly: what the relay costs a person typing.
 */
const CASE = '8. Remotes';

export const remotesCase: BenchCase = {
  id: 'remotes',
  title: 'Remotes (one deck, many machines)',
  async run(ctx: CaseContext): Promise<CaseOutcome> {
    const remoteCount = ctx.quick ? 2 : 5;
    const perRemote = ctx.quick ? 3 : 20;
    const total = remoteCount * perRemote;
    const rounds = ctx.quick ? 2 : 4;
    const rows: Row[] = [];
    const notes: string[] = [];
    const servers: BenchServer[] = [];
    const silent = await silentServer();
    try {
      const deck = await startServer();
      servers.push(deck);
      // One after another: six servers starting at once on two busy cores may miss the start deadline.
      const remotes: BenchServer[] = [];
      for (let i = 0; i < remoteCount; i++) remotes.push(await startServer());
      servers.push(...remotes);
      ctx.log(`  ${remoteCount} remotes, creating ${perRemote} sessions on each`);
      await Promise.all(remotes.map(async (r, i) => {
        for (let j = 0; j < perRemote; j++) await createSession(r, `s${i}-${j}`, { cols: 80, rows: 24 });
      }));

      // 1. Adding the remotes until every session is listed, against the listings fetched directly.
      const names = remotes.map((_, i) => `r${i}`);
      const listed = await pairedRounds(
        rounds,
        async () => {
          const t0 = nowMs();
          const lists = await Promise.all(remotes.map((r) => r.api('GET', '/api/sessions')));
          const n = lists.reduce((s, l) => s + (l.body?.sessions?.length ?? 0), 0);
          if (n !== total) throw new Error(`the remotes list ${n} sessions, not ${total}`);
          return nowMs() - t0;
        },
        async () => {
          for (const n of names) await deck.api('DELETE', `/api/remotes/${n}`);
          const t0 = nowMs();
          await Promise.all(remotes.map((r, i) => deck.api('POST', '/api/remotes', { name: names[i], url: r.url, token: r.token })));
          for (;;) {
            const n = remoteSessions((await deck.api('GET', '/api/sessions')).body);
            if (n === total) return nowMs() - t0;
            if (nowMs() - t0 > 60_000) throw new Error(`the deck listed ${n} of ${total} remote sessions after 60 s`);
            await new Promise((r) => setTimeout(r, ListPollMs));
          }
        },
      );
      rows.push({
        case: CASE,
        figure: `add ${remoteCount} remotes until the deck lists all ${total} sessions (baseline: the ${remoteCount} listings fetched directly, in parallel)`,
        ours: fmtMs(median(listed.ours)),
        baseline: fmtMs(median(listed.baseline)),
        ratio: fmtRatio(pairedRatio(listed.ours, listed.baseline)),
      });
      ctx.log(`  listed: ours ${listed.ours.map((v) => v.toFixed(0)).join(', ')} ms; direct ${listed.baseline.map((v) => v.toFixed(0)).join(', ')} ms`);

      // 2. The deck's listing with everything in it, then with a remote that never answers.
      const listings = ctx.quick ? 20 : 100;
      const timeListing = (srv: BenchServer, expect: (body: any) => boolean) => async () => {
        const times: number[] = [];
        for (let i = 0; i < listings; i++) {
          const t0 = nowMs();
          const res = await srv.api('GET', '/api/sessions');
          times.push(nowMs() - t0);
          if (res.status !== 200 || !expect(res.body)) throw new Error(`GET /api/sessions: ${res.status}, ${remoteSessions(res.body)} remote sessions`);
        }
        return times;
      };
      const full = await pairedRounds(rounds, timeListing(remotes[0], (b) => b.sessions.length === perRemote), timeListing(deck, (b) => remoteSessions(b) === total));
      rows.push(...latencyRows(CASE, `deck GET /api/sessions with ${total} remote sessions (baseline: one remote's own listing of ${perRemote})`, full));
      await deck.api('POST', '/api/remotes', { name: 'silent', url: `http://127.0.0.1:${silent.port}`, token: 'never-checked' });
      const withBad = await pairedRounds(rounds, timeListing(remotes[0], (b) => b.sessions.length === perRemote), timeListing(deck, (b) => remoteSessions(b) === total));
      rows.push(...latencyRows(CASE, `the same with a sixth remote that never answers`, withBad));
      const silentState = (await deck.api('GET', '/api/remotes')).body.remotes.find((r: { name: string }) => r.name === 'silent');
      notes.push(`Remotes: the remote that never answers was shown as ${silentState?.state} (${silentState?.reason ?? 'no reason yet'}) while the listing was timed.`);
      await deck.api('DELETE', '/api/remotes/silent');

      // 3. Keystroke echo: through the deck's relay, against the remote's view socket directly.
      const target = remotes[0];
      const id = await createSession(target, `echo-${Date.now()}`, { cols: 80, rows: 24 });
      await waitForPrompt(target, id);
      await setFloor(target, id, 'type');
      const direct = await viewSide(target.wsUrl(`/api/sessions/${encodeURIComponent(id)}/view`));
      await direct.type('cat\r');
      // The deck lists the new session (its events socket) before the view is opened through it.
      for (const t0 = nowMs(); !((await deck.api('GET', '/api/sessions')).body.sessions as { id: string }[]).some((s) => s.id === `${names[0]}/${id}`); ) {
        if (nowMs() - t0 > 30_000) throw new Error('the deck never listed the echo session');
        await new Promise((r) => setTimeout(r, ListPollMs));
      }
      const relayed = await viewSide(deck.wsUrl(`/api/sessions/${encodeURIComponent(`${names[0]}/${id}`)}/view`));
      try {
        await direct.probe.run(20, 2);
        await relayed.probe.run(20, 2);
        const keys = Math.ceil((ctx.quick ? 40 : 400) / rounds);
        const echo = await pairedRounds(
          rounds,
          async () => {
            const ms = await direct.probe.run(keys, 10);
            await direct.type('\r');
            return ms;
          },
          async () => {
            const ms = await relayed.probe.run(keys, 10);
            await relayed.type('\r');
            return ms;
          },
        );
        ctx.log(`  echo: relayed p50 ${median(echo.ours.flat()).toFixed(2)} ms; direct p50 ${median(echo.baseline.flat()).toFixed(2)} ms`);
        rows.push(...latencyRows(CASE, `${echo.ours.flat().length} keys to \`cat\` on a remote, 10 ms apart, through the deck's view socket (baseline: the remote's view socket directly)`, echo));
      } finally {
        await relayed.close();
        await direct.close();
        await closeSession(target, id);
      }
    } finally {
      for (const s of servers.reverse()) await s.stop();
      await silent.close();
    }
    return { rows, notes };
  },
};

/** How often a waiting loop asks the deck again: fine enough for figures in the hundreds of ms. */
const ListPollMs = 10;

const remoteSessions = (body: any): number => ((body?.sessions ?? []) as { host?: string }[]).filter((s) => s.host).length;

interface ViewSide {
  probe: EchoProbe;
  type(text: string): Promise<void>;
  close(): Promise<void>;
}

/** A person's view socket (floor Type): keys as input frames, echoes in binary frames, acked as a viewer does. */
async function viewSide(url: string): Promise<ViewSide> {
  let probe!: EchoProbe;
  let lastOutput = Date.now();
  let unacked = 0;
  let ws!: WebSocket;
  ws = await openSocket(url, (data, isBinary, sock) => {
    if (!isBinary) return;
    lastOutput = Date.now();
    unacked += data.length;
    if (unacked >= AckEveryBytes) {
      sock.send(JSON.stringify({ type: 'ack', bytes: unacked }));
      unacked = 0;
    }
    probe?.feed(data);
  });
  probe = new EchoProbe((key) => ws.send(JSON.stringify({ type: 'input', data: key.toString() })));
  const quiet = async (ms: number): Promise<void> => {
    await new Promise((r) => setTimeout(r, ms));
    while (Date.now() - lastOutput < ms) await new Promise((r) => setTimeout(r, ms / 2));
  };
  await quiet(200);
  return {
    probe,
    type: async (text) => {
      ws.send(JSON.stringify({ type: 'input', data: text }));
      await quiet(100);
    },
    close: () => closeSocket(ws),
  };
}

/** Acks as the viewer does (ViewerFlowControl.AckEveryBytes), so flow control never holds the echo back. */
const AckEveryBytes = 32 * 1024;

/** A TCP server that takes connections and never says a word: a remote that hangs. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const undo = onCleanup(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return { port, close: undo };
}
