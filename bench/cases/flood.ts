import type WebSocket from 'ws';
import { type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { closeSocket, openSocket } from '../lib/doors';
import { cpuMs, resetPeakRss, rssKiB, statusKiB, waitForQuiet } from '../lib/proc';
import { closeSession, createSession, execTrue, typeInto, waitForPrompt } from '../lib/sessions';
import { startServer, type BenchServer } from '../lib/server';
import { max, median, MiB, nowMs, pairedRatio, percentile } from '../lib/stats';
import { fmtMiB, fmtMiBs, fmtMs, fmtRatio, type Row } from '../lib/table';

/**
 * Case 5, a flood with a stalled reader: one session runs `yes` while its only client (an AIO binary
 * WebSocket) never reads (`ws.pause()`: the kernel buffers fill, then the server must stop sending to
 * it); another session runs `exec true` every 100 ms. Measured: the server's peak RSS and the execs'
 * latency. Baseline: the same execs and the same memory readings with no flood, on the same server, in
 * alternating periods (quiet, flood, flood, quiet, ...).
 *
 * Also shown: how fast the server drained the flooding PTY (its log offset grows by what it read), and
 * the execs in the two seconds after the flood stops, when the server may still be digesting it.
 */
const CASE = '5. Flood with a stalled reader';

interface Period {
  execMs: number[];
  peakKiB: number;
  /** Bytes the server read from the flooding session's PTY during the period. */
  ingested: number;
  ms: number;
  /** Execs in the seconds after a flood stopped. */
  afterMs: number[];
  /** Server CPU from stopping the flood until the server went quiet: the flood's leftover work. */
  afterCpuMs: number;
}

export const floodCase: BenchCase = {
  id: 'flood',
  title: 'Flood with a stalled reader',
  async run(ctx: CaseContext): Promise<CaseOutcome> {
    const periodMs = ctx.quick ? 1500 : 10_000;
    const afterMs = ctx.quick ? 1000 : 2000;
    // Five floods: the execs after them are 100 (20 each), the fewest for which a p99 is not simply the
    // largest one (nearest rank). With two floods, one slow exec among 40 was the figure.
    const rounds = ctx.quick ? 1 : 5;
    const srv = await startServer();
    const rows: Row[] = [];
    try {
      const flooder = await createSession(srv, 'flood');
      const prober = await createSession(srv, 'probe');
      await waitForPrompt(srv, flooder);
      await waitForPrompt(srv, prober);
      for (let i = 0; i < 10; i++) await execTrue(srv, prober); // warm-up
      const quiet: Period[] = [];
      const flood: Period[] = [];
      for (let r = 0; r < rounds; r++) {
        // ABBA: quiet, flood, then flood, quiet.
        const order = r % 2 === 0 ? ['quiet', 'flood'] : ['flood', 'quiet'];
        for (const kind of order) {
          await waitForQuiet(srv.pid, { maxMs: 20_000 });
          if (kind === 'quiet') quiet.push(await period(srv, prober, null, periodMs));
          else flood.push(await period(srv, prober, flooder, periodMs, afterMs));
          const last = kind === 'quiet' ? quiet[quiet.length - 1] : flood[flood.length - 1];
          ctx.log(
            `  ${kind}: exec p50 ${median(last.execMs).toFixed(1)} p99 ${percentile(last.execMs, 99).toFixed(1)} ms (${last.execMs.length} execs), peak RSS ${(last.peakKiB / 1024).toFixed(0)} MiB` +
              (kind === 'flood' ? `, read ${(last.ingested / MiB / (last.ms / 1000)).toFixed(0)} MiB/s from the PTY, after: p99 ${percentile(last.afterMs, 99).toFixed(1)} ms` : ''),
          );
        }
      }
      const secs = periodMs / 1000;
      // Memory does not drift like time does, but a flood leaves the heap grown: the baseline is the
      // quiet period before any flood, not the median of quiet periods.
      const floodPeak = max(flood.map((p) => p.peakKiB));
      rows.push({
        case: CASE,
        figure: `server peak RSS, ${secs} s of \`yes\` with a paused AIO binary reader (baseline: the same server before any flood)`,
        ours: fmtMiB(floodPeak / 1024),
        baseline: fmtMiB(quiet[0].peakKiB / 1024),
        ratio: fmtRatio(floodPeak / quiet[0].peakKiB),
      });
      for (const p of [50, 99] as const) {
        rows.push({
          case: CASE,
          figure: `\`exec true\` every 100 ms in another session, during the flood: p${p} (baseline: no flood)`,
          ours: fmtMs(percentile(flood.flatMap((x) => x.execMs), p)),
          baseline: fmtMs(percentile(quiet.flatMap((x) => x.execMs), p)),
          ratio: fmtRatio(
            pairedRatio(
              flood.map((x) => percentile(x.execMs, p)),
              quiet.map((x) => percentile(x.execMs, p)),
            ),
          ),
        });
      }
      const afterFloods = flood.flatMap((x) => x.afterMs);
      const quietP99 = percentile(quiet.flatMap((x) => x.execMs), 99);
      rows.push({
        case: CASE,
        figure: `\`exec true\` in the ${afterMs / 1000} s after the flood stops (${afterFloods.length} execs after ${flood.length} floods): p99; max`,
        ours: `${fmtMs(percentile(afterFloods, 99))}; ${fmtMs(max(afterFloods))}`,
        baseline: fmtMs(quietP99),
        ratio: fmtRatio(percentile(afterFloods, 99) / quietP99),
      });
      rows.push({
        case: CASE,
        figure: 'rate the server read the flooding PTY (`yes`, nobody reading the socket); server CPU from ^C until quiet',
        ours: `${fmtMiBs(median(flood.map((p) => p.ingested / MiB / (p.ms / 1000))))}; ${fmtMs(median(flood.map((p) => p.afterCpuMs)))}`,
        baseline: '—',
        ratio: '—',
      });
      await closeSession(srv, flooder);
      await closeSession(srv, prober);
    } finally {
      await srv.stop();
    }
    return { rows, notes: [] };
  },
};

async function outputOffset(srv: BenchServer, id: string): Promise<number> {
  const res = await srv.api('GET', `/pty/${id}`);
  return Number(res.body?.output_offset ?? 0);
}

/** One period: execs every 100 ms on `prober` while `flooder` (if any) runs `yes` to a paused reader. */
async function period(srv: BenchServer, prober: string, flooder: string | null, ms: number, afterMs = 0): Promise<Period> {
  let stalled: WebSocket | null = null;
  let offset0 = 0;
  if (flooder) {
    // A fresh stalled socket each time: a paused client answers no pings, and would be dropped after a minute.
    stalled = await openSocket(srv.wsUrl(`/v2/pty/sessions/${flooder}/ws`, { protocol: 'binary' }));
    stalled.pause();
    offset0 = await outputOffset(srv, flooder);
  }
  const canResetPeak = resetPeakRss(srv.pid);
  let peak = rssKiB(srv.pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssKiB(srv.pid))), 50);
  if (flooder) await typeInto(srv, flooder, 'yes\r');
  const execMs = await execsFor(srv, prober, ms);
  if (canResetPeak) peak = Math.max(peak, statusKiB(srv.pid, 'VmHWM'));
  clearInterval(sampler);
  const period: Period = { execMs, peakKiB: peak, ingested: 0, ms, afterMs: [], afterCpuMs: 0 };
  if (flooder) {
    period.ingested = (await outputOffset(srv, flooder)) - offset0;
    const cpu0 = cpuMs(srv.pid);
    await typeInto(srv, flooder, '\x03');
    period.afterMs = await execsFor(srv, prober, afterMs);
    await closeSocket(stalled!);
    await waitForPrompt(srv, flooder, 30_000);
    await waitForQuiet(srv.pid, { maxMs: 20_000 });
    period.afterCpuMs = cpuMs(srv.pid) - cpu0;
  }
  return period;
}

/** `exec true` every 100 ms (start to start; back to back when one takes longer) for `ms`. */
async function execsFor(srv: BenchServer, id: string, ms: number): Promise<number[]> {
  const out: number[] = [];
  const end = nowMs() + ms;
  while (nowMs() < end) {
    const t0 = nowMs();
    await execTrue(srv, id);
    const took = nowMs() - t0;
    out.push(took);
    if (took < 100) await new Promise((r) => setTimeout(r, 100 - took));
  }
  return out;
}
