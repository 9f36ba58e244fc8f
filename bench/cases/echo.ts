import WebSocket from 'ws';
import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { spawnDirect } from '../lib/direct-pty';
import { openSocket, closeSocket } from '../lib/doors';
import { EchoProbe } from '../lib/echo-probe';
import { closeSession, createSession, waitForPrompt } from '../lib/sessions';
import { startServer, type BenchBackend, type BenchServer } from '../lib/server';
import { median, pairedRatio, percentile } from '../lib/stats';
import { fmtMs, fmtRatio, type Row } from '../lib/table';

/**
 * Case 2, keystroke echo: single keys to `cat` over the AIO binary WebSocket, time until the frame with
 * the echo arrives; against the same keys to `cat` on node-pty in this process. `cat` runs in the
 * terminal's cooked mode, so the echo comes from the line discipline as soon as the key is in: what is
 * timed is the path key → server → PTY → server → client.
 *
 * Two paces: 10 ms between keys (fast typing; each key finds the server idle) and back to back (the next
 * key as soon as the echo is in), which shows what output batching does to a fast stream of small writes.
 * Under the canonical line limit (4,095 bytes) throughout: each round ends with Enter.
 */
export interface EchoOptions {
  backend: BenchBackend;
  label: string;
  /** Keys per pace in a full run (split across rounds). */
  keys: number;
  quickKeys: number;
  paces: number[];
}

export function makeEchoCase(opts: EchoOptions): BenchCase {
  return {
    id: opts.backend === 'host' ? 'echo' : `echo-${opts.backend}`,
    title: `Keystroke echo (${opts.label})`,
    run: (ctx) => runEcho(ctx, opts),
  };
}

export const echoCase = makeEchoCase({ backend: 'host', label: 'PTY host backend', keys: 1000, quickKeys: 60, paces: [10, 0] });

interface Side {
  probe: EchoProbe;
  /** Ends the current line (Enter) and waits until its output has passed. */
  endLine(): Promise<void>;
  close(): Promise<void>;
}

async function runEcho(ctx: CaseContext, opts: EchoOptions): Promise<CaseOutcome> {
  const rounds = ctx.quick ? 2 : 4;
  const perRound = Math.ceil((ctx.quick ? opts.quickKeys : opts.keys) / rounds);
  const srv = await startServer({ AIO_SHELL_BACKEND: opts.backend });
  const rows: Row[] = [];
  try {
    const ours = await serverSide(srv);
    const base = await directSide();
    try {
      for (const side of [ours, base]) {
        await side.probe.run(20, 2); // warm-up: JIT, first-use allocations
        await side.endLine();
      }
      for (const pace of opts.paces) {
        const runRound = (side: Side) => async () => {
          const ms = await side.probe.run(perRound, pace);
          await side.endLine();
          return ms;
        };
        const res = await pairedRounds(rounds, runRound(base), runRound(ours));
        const all = { ours: res.ours.flat(), baseline: res.baseline.flat() };
        const paceText = pace > 0 ? `${pace} ms apart` : 'back to back';
        ctx.log(`  ${paceText}: ours p50 ${median(all.ours).toFixed(2)} p99 ${percentile(all.ours, 99).toFixed(2)} ms; node-pty p50 ${median(all.baseline).toFixed(2)} p99 ${percentile(all.baseline, 99).toFixed(2)} ms`);
        for (const [name, p] of [
          ['p50', 50],
          ['p99', 99],
        ] as const) {
          rows.push({
            case: `2. Keystroke echo${opts.backend === 'host' ? '' : ` (${opts.label})`}`,
            figure: `${all.ours.length} keys to \`cat\`, ${paceText}, AIO binary WebSocket: ${name}`,
            ours: fmtMs(percentile(all.ours, p)),
            baseline: fmtMs(percentile(all.baseline, p)),
            ratio: fmtRatio(
              pairedRatio(
                res.ours.map((r) => percentile(r, p)),
                res.baseline.map((r) => percentile(r, p)),
              ),
            ),
          });
        }
      }
    } finally {
      await ours.close();
      await base.close();
    }
  } finally {
    await srv.stop();
  }
  return { rows, notes: [] };
}

async function serverSide(srv: BenchServer): Promise<Side> {
  const id = await createSession(srv, `echo-${Date.now()}`);
  let probe!: EchoProbe;
  let lastOutput = Date.now();
  const ws: WebSocket = await openSocket(srv.wsUrl(`/v2/pty/sessions/${id}/ws`, { protocol: 'binary' }), (data, isBinary) => {
    if (!isBinary) return;
    lastOutput = Date.now();
    probe?.feed(data);
  });
  probe = new EchoProbe((key) => ws.send(key, { binary: true }));
  await waitForPrompt(srv, id);
  ws.send(Buffer.from('cat\r'), { binary: true });
  await quiet(() => lastOutput, 300);
  return {
    probe,
    endLine: async () => {
      ws.send(Buffer.from('\r'), { binary: true });
      await quiet(() => lastOutput, 100);
    },
    close: async () => {
      await closeSocket(ws);
      await closeSession(srv, id);
    },
  };
}

async function directSide(): Promise<Side> {
  const sh = spawnDirect('/bin/cat', []);
  let lastOutput = Date.now();
  const probe = new EchoProbe((key) => sh.write(key));
  sh.onData((d) => {
    lastOutput = Date.now();
    probe.feed(d);
  });
  await new Promise((r) => setTimeout(r, 100));
  return {
    probe,
    endLine: async () => {
      sh.write('\r');
      await quiet(() => lastOutput, 100);
    },
    close: () => sh.kill(),
  };
}

/** Waits until nothing has arrived for `ms`. */
async function quiet(last: () => number, ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
  while (Date.now() - last() < ms) await new Promise((r) => setTimeout(r, ms / 2));
}
