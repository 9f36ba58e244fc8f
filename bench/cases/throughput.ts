import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { spawnDirect } from '../lib/direct-pty';
import { attachDoor, DoorLabels, type DoorName } from '../lib/doors';
import { writePayload, type Payload } from '../lib/payload';
import { collectNow } from '../../src/main/terminal/collect';
import { cpuMs, machineBusyMs, waitForQuiet } from '../lib/proc';
import { closeSession, createExecdSession, createSession, typeInto, waitForPrompt } from '../lib/sessions';
import { startServer, type BenchBackend, type BenchServer } from '../lib/server';
import { median, MiB, pairedRatio } from '../lib/stats';
import { describeFailure, finishWithin, StreamCheck, type CheckResult } from '../lib/stream-check';
import { fmtKiB, fmtMiBs, fmtMs, fmtRatio, type Row } from '../lib/table';

/**
 * Case 1, output throughput: `cat` of a prepared file (256 MiB of mixed text) through the PTY, the
 * server and one client, for each output door; against the same `cat` read by node-pty in this process.
 * Every byte is checked (length and CRC) at the client.
 */
export interface ThroughputOptions {
  backend: BenchBackend;
  label: string;
  doors: DoorName[];
  sizeMiB: number;
  quickSizeMiB: number;
  rounds: number;
}

interface Run {
  result: CheckResult;
  /** Server CPU from typing the command to the end of the stream. */
  serverCpuMs?: number;
  /** Server CPU in the seconds after the stream, until it went quiet (work the stream left behind). */
  afterCpuMs?: number;
  /** CPU of the process that holds the PTY (the PTY host, or the tmux server) while streaming. */
  helperCpuMs?: number;
  /** CPU the whole machine spent while streaming, and this process's share of it (the door's client, or the baseline's reader). */
  machineCpuMs: number;
  clientCpuMs: number;
}

export function makeThroughputCase(opts: ThroughputOptions): BenchCase {
  return {
    id: opts.backend === 'host' ? 'throughput' : `throughput-${opts.backend}`,
    title: `Output throughput (${opts.label})`,
    run: (ctx) => runThroughput(ctx, opts),
  };
}

export const throughputCase = makeThroughputCase({
  backend: 'host',
  label: 'PTY host backend',
  doors: ['aio-binary', 'aio-json', 'execd', 'viewer'],
  sizeMiB: 256,
  quickSizeMiB: 4,
  // Four rounds (ABBA twice): each 256 MiB run takes 3-30 s on a shared 2-core machine, and with two
  // rounds the execd door's ratio swung by ±0.06 between full runs of the same code.
  rounds: 4,
});

/** The same doors with node-pty inside the server (AIO_SHELL_BACKEND=native), the architecture before the PTY host. */
export const throughputNativeCase = makeThroughputCase({
  backend: 'native',
  label: 'node-pty in the server',
  doors: ['aio-binary', 'aio-json'],
  sizeMiB: 64,
  quickSizeMiB: 2,
  rounds: 2,
});

export async function runThroughput(ctx: CaseContext, opts: ThroughputOptions): Promise<CaseOutcome> {
  const size = (ctx.quick ? opts.quickSizeMiB : opts.sizeMiB) * MiB;
  const rounds = ctx.quick ? 1 : opts.rounds;
  const caseName = `1. Output throughput${opts.backend === 'host' ? '' : ` (${opts.label})`}`;
  ctx.log(`preparing a ${size / MiB} MiB payload`);
  const payload = writePayload(ctx.workDir, size);
  // A stream that stalls is a failure, not a long wait: allow 2 MiB/s at the very least.
  const timeoutMs = 30_000 + (payload.expectedBytes / (2 * MiB)) * 1000;
  const srv = await startServer({ AIO_SHELL_BACKEND: opts.backend });
  const rows: Row[] = [];
  const notes: string[] = [];
  try {
    if (!ctx.quick) {
      // Warm-up, untimed: the first stream through a fresh server runs cold code (JIT, first-use allocations).
      const warm = writePayload(ctx.workDir, 4 * MiB, 2);
      for (const door of opts.doors) await serverRun(srv, door, warm, timeoutMs);
      await baselineRun(warm, timeoutMs);
    }
    for (const door of opts.doors) {
      const runs = await pairedRounds(
        rounds,
        async () => {
          const r = await baselineRun(payload, timeoutMs);
          ctx.log(`  node-pty direct: ${r.result.ok ? `${r.result.mibPerSec.toFixed(0)} MiB/s` : describeFailure(r.result)}`);
          return r;
        },
        async () => {
          const r = await serverRun(srv, door, payload, timeoutMs);
          ctx.log(
            `  ${DoorLabels[door]}: ${r.result.ok ? `${r.result.mibPerSec.toFixed(0)} MiB/s` : describeFailure(r.result)}` +
              ` (server CPU ${Math.round(r.serverCpuMs ?? 0)} ms during, ${Math.round(r.afterCpuMs ?? 0)} ms after)`,
          );
          return r;
        },
      );
      rows.push(...rowsFor(caseName, door, runs, size, notes));
    }
  } finally {
    await srv.stop();
  }
  return { rows, notes };
}

function rowsFor(caseName: string, door: DoorName, runs: { baseline: Run[]; ours: Run[] }, size: number, notes: string[]): Row[] {
  const rate = (rs: Run[]): number[] => rs.map((r) => (r.result.ok ? r.result.mibPerSec : Number.NaN));
  const failed = runs.ours.filter((r) => !r.result.ok);
  const baseFailed = runs.baseline.filter((r) => !r.result.ok);
  for (const r of failed) notes.push(`${caseName}, ${DoorLabels[door]}: ${describeFailure(r.result)}.`);
  for (const r of baseFailed) notes.push(`${caseName}, baseline (beside ${DoorLabels[door]}): ${describeFailure(r.result)}.`);
  let ours: string;
  let ratio: string;
  let figure = `${size / MiB} MiB \`cat\` → ${DoorLabels[door]} (MiB/s)`;
  // The viewer door is screen-true, not byte-exact: a viewer more than 2 MiB behind that would need
  // over half a second to catch up at its pace is sent a fresh snapshot instead of the backlog (by design: no person reads 50 MiB/s). Its figure is the rate it
  // followed the stream at, with the resyncs it took; anything else it lost is still a failure.
  const onlyResyncs = (r: Run): boolean => !r.result.ok && r.result.lossSignals.length > 0 && r.result.lossSignals.every((l) => l.startsWith('resync'));
  const baseline = baseFailed.length ? `FAILED (${describeFailure(baseFailed[0].result)})` : fmtMiBs(median(rate(runs.baseline)));
  if (door === 'viewer' && failed.length && failed.every(onlyResyncs) && !baseFailed.length) {
    const followed = runs.ours.map((r) => r.result.mibPerSec);
    const resyncs = median(runs.ours.map((r) => r.result.lossSignals.length));
    figure = `${size / MiB} MiB \`cat\` → ${DoorLabels[door]} (MiB/s followed; a viewer that falls behind is resynced by design)`;
    ours = `${fmtMiBs(median(followed))} (${resyncs} resyncs)`;
    ratio = fmtRatio(pairedRatio(followed, rate(runs.baseline)));
  } else if (failed.length) {
    const f = failed[0].result;
    const delivered = f.expectedBytes ? Math.round((100 * f.bytes) / f.expectedBytes) : 0;
    const resyncs = f.lossSignals.length ? `, ${f.lossSignals.length} loss report(s) from the door` : '';
    ours = `FAILED: lost bytes (${failed.length}/${runs.ours.length} runs; ${delivered}% delivered${resyncs}; ${fmtMiBs(f.mibPerSec)})`;
    ratio = 'n/a';
  } else {
    ours = fmtMiBs(median(rate(runs.ours)));
    ratio = baseFailed.length ? 'n/a' : fmtRatio(pairedRatio(rate(runs.ours), rate(runs.baseline)));
  }
  const avgFrameKiB = (rs: Run[]): number => median(rs.map((r) => r.result.bytes / Math.max(1, r.result.frames) / 1024));
  const perMiB = (ms: number[]): string => `${fmtMs(median(ms) / (size / MiB))}/MiB`;
  const helperCpu = runs.ours.filter((r) => r.helperCpuMs !== undefined).map((r) => r.helperCpuMs!);
  const helper = runs.ours[0]?.helperCpuMs === undefined ? '' : caseName.includes('tmux') ? ' (+ its tmux server’s)' : ' (+ the PTY host’s)';
  return [
    { case: caseName, figure, ours, baseline, ratio },
    {
      case: caseName,
      figure: `${DoorLabels[door]}: server CPU per MiB${helper}; average frame (baseline: average node-pty read); server CPU after the stream ended`,
      ours:
        `${perMiB(runs.ours.map((r) => r.serverCpuMs ?? Number.NaN))}${helperCpu.length ? ` (+ ${perMiB(helperCpu)})` : ''}; ` +
        `${fmtKiB(avgFrameKiB(runs.ours))}; +${fmtMs(median(runs.ours.map((r) => r.afterCpuMs ?? Number.NaN)))}`,
      baseline: fmtKiB(avgFrameKiB(runs.baseline)),
      ratio: '—',
    },
    {
      case: caseName,
      figure: `${DoorLabels[door]}: CPU per MiB of the whole machine, every process and the kernel (in brackets: this process's share, the door's client; baseline: the node-pty reader)`,
      ours: `${perMiB(runs.ours.map((r) => r.machineCpuMs))} (${perMiB(runs.ours.map((r) => r.clientCpuMs))})`,
      baseline: `${perMiB(runs.baseline.map((r) => r.machineCpuMs))} (${perMiB(runs.baseline.map((r) => r.clientCpuMs))})`,
      ratio: fmtRatio(
        pairedRatio(
          runs.ours.map((r) => r.machineCpuMs),
          runs.baseline.map((r) => r.machineCpuMs),
        ),
      ),
    },
  ];
}

/**
 * Starts counting CPU: the whole machine's and this process's; the function returned reads both. This
 * process's garbage is collected first (preparing a 256 MiB payload leaves a lot): otherwise whichever
 * run comes next, ours or the baseline, pays for it.
 */
function startCpuWatch(): () => { machineCpuMs: number; clientCpuMs: number } {
  collectNow();
  const machine0 = machineBusyMs();
  const own0 = process.cpuUsage();
  return () => {
    const own = process.cpuUsage(own0);
    return { machineCpuMs: machineBusyMs() - machine0, clientCpuMs: (own.user + own.system) / 1000 };
  };
}

async function baselineRun(payload: Payload, timeoutMs: number): Promise<Run> {
  const check = new StreamCheck(payload);
  const cpu = startCpuWatch();
  // The shell stays alive after `cat`, as the server's does: node-pty drops the last bytes a PTY holds
  // when its process exits at once (measured: ~10 KiB of an 8 MiB `exec cat`).
  const sh = spawnDirect('/bin/bash', ['-c', `cat '${payload.path}'; exec sleep 600`]);
  const off = sh.onData((d) => check.feed(d));
  await finishWithin(check, timeoutMs, 'node-pty direct');
  const used = cpu();
  off();
  await sh.kill();
  return { result: check.result(), ...used };
}

export async function serverRun(srv: BenchServer, door: DoorName, payload: Payload, timeoutMs: number): Promise<Run> {
  const check = new StreamCheck(payload);
  // A fresh session per run: one session's log and screen never weigh on the next run.
  const id = door === 'execd' ? await createExecdSession(srv) : await createSession(srv, `tp-${door}-${Date.now()}`);
  const client = await attachDoor(door, srv, id, check);
  try {
    await waitForPrompt(srv, id);
    await waitForQuiet(srv.pid);
    const helper = srv.tmuxPid() ?? srv.hostPid();
    const cpu0 = cpuMs(srv.pid);
    const helper0 = helper ? cpuMs(helper) : 0;
    const cpu = startCpuWatch();
    await typeInto(srv, id, `cat '${payload.path}'\r`);
    await finishWithin(check, timeoutMs, DoorLabels[door]);
    const used = cpu();
    const cpu1 = cpuMs(srv.pid);
    const helperCpuMs = helper ? cpuMs(helper) - helper0 : undefined;
    await waitForQuiet(srv.pid, { maxMs: 15_000 });
    return { result: check.result(), serverCpuMs: cpu1 - cpu0, afterCpuMs: cpuMs(srv.pid) - cpu1, helperCpuMs, ...used };
  } finally {
    await client.close();
    await closeSession(srv, id);
  }
}
