import { MemoryConstants } from '../../src/main/terminal/constants';
import { SettledAfterOutputMs } from '../../src/main/terminal/memory-budget';
import { barePtyMemory } from '../lib/bare-pty-memory';
import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { spawnDirect, spawnMarkerShell, type DirectPty } from '../lib/direct-pty';
import { attachAio } from '../lib/doors';
import { writePayload, type Payload } from '../lib/payload';
import { cpuMs, rssKiB, waitForQuiet } from '../lib/proc';
import { closeSession, createSession } from '../lib/sessions';
import { startServer, type BenchServer } from '../lib/server';
import { median, MiB, nowMs, pairedRatio } from '../lib/stats';
import { describeFailure, finishWithin, StreamCheck, type CheckResult } from '../lib/stream-check';
import { fmtKiB, fmtMiB, fmtMiBs, fmtRatio, latencyRows, type Row } from '../lib/table';

/**
 * Case 4, scale.
 *   - 100 sessions created one after another (AIO v2 create answers once the shell's first prompt is
 *     drawn); against node-pty spawning a bash to its first prompt in this process, interleaved.
 *   - The server's RSS with those 100 idle sessions, minus before, per session. The shells are other
 *     processes, so they are not in it. Against a bare Node process holding 100 node-pty bashes.
 *   - 50 of them `cat` 8 MiB each at the same moment, each read by its own AIO binary WebSocket:
 *     aggregate MiB/s and every byte checked; against 50 node-pty `cat`s read in this process.
 */
const CASE = '4. Scale';
const BudgetMiB = MemoryConstants.DefaultBudgetBytes / MiB;

export const scaleCase: BenchCase = {
  id: 'scale',
  title: 'Scale',
  async run(ctx: CaseContext): Promise<CaseOutcome> {
    const sessions = ctx.quick ? 6 : 100;
    const streams = ctx.quick ? 6 : 50;
    const streamBytes = ctx.quick ? MiB / 2 : 8 * MiB;
    const settleMs = ctx.quick ? 300 : 1500;
    const rounds = 2;
    // The burst's ratio swung by ±0.06 between full runs of the same code with two rounds; four narrow it.
    const burstRounds = 4;
    const rows: Row[] = [];
    const notes: string[] = [];
    const payload = writePayload(ctx.workDir, streamBytes, 7);
    const srv = await startServer();
    const ids: string[] = [];
    try {
      // Warm the server up (code paths, first-use allocations) so "before" is a running server.
      for (let i = 0; i < 2; i++) await closeSession(srv, await createSession(srv, `warm-${i}`));
      await waitForQuiet(srv.pid);
      await new Promise((r) => setTimeout(r, 500));
      const before = rssKiB(srv.pid);

      // 1. Creates, in rounds, each beside node-pty spawning the same number of bashes.
      const creates = await measureCreates(srv, ids, Math.ceil(sessions / rounds), rounds, 'scale');
      rows.push(...createRows(CASE, creates, ids.length));
      ctx.log(`  create: ours p50 ${median(creates.ours.flat()).toFixed(1)} ms; node-pty p50 ${median(creates.baseline.flat()).toFixed(1)} ms`);

      // 2. Memory of idle sessions.
      await waitForQuiet(srv.pid);
      await new Promise((r) => setTimeout(r, settleMs));
      const after = rssKiB(srv.pid);
      const bare = await barePtyMemory(ctx.workDir, ids.length);
      const oursPer = (after - before) / ids.length;
      const barePer = (bare.afterKiB - bare.beforeKiB) / ids.length;
      rows.push({
        case: CASE,
        figure: `server RSS per idle session (${ids.length} sessions; ${fmtMiB(before / 1024)} before, ${fmtMiB(after / 1024)} after)`,
        ours: fmtKiB(oursPer),
        baseline: fmtKiB(barePer),
        ratio: fmtRatio(oursPer / barePer),
      });
      ctx.log(`  idle memory: ours ${oursPer.toFixed(0)} KiB/session (RSS ${before} → ${after} KiB); bare node-pty ${barePer.toFixed(0)} KiB/session`);

      // 3. Many streams at once (after an untimed warm-up burst on a few sessions in a full run).
      if (!ctx.quick) await serverBurst(srv, ids.slice(0, 5), writePayload(ctx.workDir, MiB, 8));
      const burst = await pairedRounds(
        ctx.quick ? 1 : burstRounds,
        () => directBurst(payload, streams),
        () => serverBurst(srv, ids.slice(0, streams), payload),
      );
      const failed = burst.ours.flatMap((b) => b.results.filter((r) => !r.ok));
      for (const f of failed.slice(0, 3)) notes.push(`Scale, ${streams} streams at once: ${describeFailure(f)}.`);
      const rate = (bs: Burst[]): number[] => bs.map((b) => b.mibPerSec);
      rows.push({
        case: CASE,
        figure: `${streams} sessions \`cat\` ${streamBytes / MiB} MiB each at once, AIO binary WebSockets: aggregate MiB/s`,
        ours: failed.length
          ? `FAILED: lost bytes (${failed.length} of ${streams * burst.ours.length} streams; ${describeFailure(failed[0])})`
          : fmtMiBs(median(rate(burst.ours))),
        baseline: fmtMiBs(median(rate(burst.baseline))),
        ratio: failed.length ? 'n/a' : fmtRatio(pairedRatio(rate(burst.ours), rate(burst.baseline))),
      });
      const cpu = burst.ours.map((b) => b.cpuMsPerMiB!);
      const hostCpu = cpu.every((c) => c.host !== null) ? median(cpu.map((c) => c.host!)) : null;
      rows.push({
        case: CASE,
        figure: `${streams} sessions at once: server CPU per MiB streamed${hostCpu !== null ? ' (+ the PTY host’s)' : ''}, from the command to the last byte`,
        ours: `${median(cpu.map((c) => c.server)).toPrecision(3)} ms/MiB${hostCpu !== null ? ` (+ ${hostCpu.toPrecision(3)} ms/MiB)` : ''}`,
        baseline: '—',
        ratio: '—',
      });
      ctx.log(`  burst: ours ${rate(burst.ours).map((r) => r.toFixed(0)).join(', ')} MiB/s; node-pty ${rate(burst.baseline).map((r) => r.toFixed(0)).join(', ')} MiB/s; server CPU ${cpu.map((c) => c.server.toFixed(1)).join(', ')} ms/MiB, host ${cpu.map((c) => c.host?.toFixed(1)).join(', ')}, this client ${cpu.map((c) => c.client.toFixed(1)).join(', ')}`);
      await waitForQuiet(srv.pid, { maxMs: 30_000 });
      const host = srv.hostPid();
      const atQuiet = rssKiB(srv.pid);
      const hostAtQuiet = host ? rssKiB(host) : 0;
      // What a server holds once idle again: the budget releases memory a few seconds after output stops.
      await new Promise((r) => setTimeout(r, SettledAfterOutputMs));
      const afterBurst = rssKiB(srv.pid);
      rows.push({
        case: CASE,
        figure: `server RSS after the bursts, ${SettledAfterOutputMs / 1000} s after the last byte (in brackets: once the server was quiet, before the budget had settled; ${ids.length} sessions, ${streams} of them holding ${streamBytes / MiB} MiB of log; memory budget ${BudgetMiB} MiB)`,
        ours: `${fmtMiB(afterBurst / 1024)} (${fmtMiB(atQuiet / 1024)})`,
        baseline: '—',
        ratio: '—',
      });
      // The PTY host holds the terminals' own logs (under the same budget): shown beside, not hidden.
      if (host) {
        rows.push({
          case: CASE,
          figure: 'PTY host RSS after the bursts, at the same moments (the same sessions; it holds the PTYs and their logs)',
          ours: `${fmtMiB(rssKiB(host) / 1024)} (${fmtMiB(hostAtQuiet / 1024)})`,
          baseline: '—',
          ratio: '—',
        });
      }

      // 4. Closing them, one by one.
      const closes = await measureCloses(srv, ids.splice(0), rounds);
      rows.push(...latencyRows(CASE, `close ${closes.ours.flat().length} sessions one by one (AIO v2 DELETE; baseline: kill the shell, until it exits)`, closes));
    } finally {
      for (const id of ids) await closeSession(srv, id);
      await srv.stop();
    }
    return { rows, notes };
  },
};

/**
 * Creates `perRound` sessions per round (ids appended to `ids`; they stay open), each round beside
 * node-pty spawning as many marker bashes to their first prompt (killed after the round).
 */
export async function measureCreates(srv: BenchServer, ids: string[], perRound: number, rounds: number, prefix: string): Promise<{ ours: number[][]; baseline: number[][] }> {
  return pairedRounds(
    rounds,
    async () => {
      const held: DirectPty[] = [];
      const times: number[] = [];
      for (let i = 0; i < perRound; i++) {
        const t0 = nowMs();
        held.push(await spawnMarkerShell());
        times.push(nowMs() - t0);
      }
      for (const sh of held) await sh.kill();
      return times;
    },
    async (round) => {
      const times: number[] = [];
      for (let i = 0; i < perRound; i++) {
        const t0 = nowMs();
        ids.push(await createSession(srv, `${prefix}-${round}-${i}`));
        times.push(nowMs() - t0);
      }
      return times;
    },
  );
}

export function createRows(caseName: string, creates: { ours: number[][]; baseline: number[][] }, n: number): Row[] {
  return latencyRows(caseName, `create ${n} sessions one by one (AIO v2, to first prompt)`, creates);
}


/**
 * Closes `ids` one by one in `rounds` batches (AIO v2 DELETE, which answers once the shell's process
 * tree is gone), each beside node-pty killing as many bashes and waiting for their exit.
 */
async function measureCloses(srv: BenchServer, ids: string[], rounds: number): Promise<{ ours: number[][]; baseline: number[][] }> {
  const perRound = Math.ceil(ids.length / rounds);
  return pairedRounds(
    rounds,
    async () => {
      const held: DirectPty[] = [];
      for (let i = 0; i < perRound; i++) held.push(await spawnMarkerShell());
      const times: number[] = [];
      for (const sh of held) {
        const t0 = nowMs();
        await sh.kill();
        times.push(nowMs() - t0);
      }
      return times;
    },
    async (round) => {
      const times: number[] = [];
      for (const id of ids.slice(round * perRound, (round + 1) * perRound)) {
        const t0 = nowMs();
        const res = await srv.api('DELETE', `/v2/pty/sessions/${encodeURIComponent(id)}`);
        times.push(nowMs() - t0);
        if (res.status !== 200 || !res.body?.success) throw new Error(`DELETE ${id}: ${res.status} ${JSON.stringify(res.body)}`);
      }
      return times;
    },
  );
}

interface Burst {
  results: CheckResult[];
  /** All payload bytes ÷ (last END − first BEGIN). */
  mibPerSec: number;
  /** The server's CPU (and the PTY host's) from the command to the last END, per MiB streamed. */
  cpuMsPerMiB?: { server: number; host: number | null; client: number };
}

/** Every check stamps BEGIN and END on the same clock: the burst spans the first BEGIN to the last END. */
function aggregate(checks: StreamCheck[]): Burst {
  const results = checks.map((c) => c.result());
  const bytes = results.reduce((s, r) => s + r.bytes, 0);
  const span = Math.max(...checks.map((c) => c.endedAtMs)) - Math.min(...checks.map((c) => c.beganAtMs));
  return { results, mibPerSec: bytes / MiB / (span / 1000) };
}

async function serverBurst(srv: BenchServer, ids: string[], payload: Payload): Promise<Burst> {
  const checks = ids.map(() => new StreamCheck(payload));
  const clients = await Promise.all(ids.map((id, i) => attachAio(srv, id, checks[i], 'binary')));
  try {
    await waitForQuiet(srv.pid);
    const host = srv.hostPid();
    const cpu0 = { server: cpuMs(srv.pid), host: host ? cpuMs(host) : 0, client: process.cpuUsage() };
    // Typed on each session's own socket, all in one turn: as close to "at once" as a client can be.
    for (const c of clients) c.ws.send(Buffer.from(`cat '${payload.path}'\r`), { binary: true });
    await Promise.all(checks.map((c) => finishWithin(c, 120_000, 'burst')));
    const burst = aggregate(checks);
    const mib = burst.results.reduce((s, r) => s + r.bytes, 0) / MiB;
    const client = process.cpuUsage(cpu0.client);
    burst.cpuMsPerMiB = { server: (cpuMs(srv.pid) - cpu0.server) / mib, host: host ? (cpuMs(host) - cpu0.host) / mib : null, client: (client.user + client.system) / 1000 / mib };
    return burst;
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

async function directBurst(payload: Payload, n: number): Promise<Burst> {
  const checks = Array.from({ length: n }, () => new StreamCheck(payload));
  const shells = checks.map((check) => {
    const sh = spawnDirect('/bin/bash', ['-c', `cat '${payload.path}'; exec sleep 600`]);
    sh.onData((d) => check.feed(d));
    return sh;
  });
  try {
    await Promise.all(checks.map((c) => finishWithin(c, 120_000, 'node-pty burst')));
    return aggregate(checks);
  } finally {
    await Promise.all(shells.map((s) => s.kill()));
  }
}
