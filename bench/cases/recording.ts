import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { writePayload } from '../lib/payload';
import { startServer } from '../lib/server';
import { median, MiB, pairedRatio } from '../lib/stats';
import { describeFailure } from '../lib/stream-check';
import { fmtMiB, fmtMiBs, fmtMs, fmtRatio, type Row } from '../lib/table';
import { serverRun } from './throughput';

/**
 * Case 8, the cost of recording (on by default): the same `cat` through the same door (AIO binary
 * WebSocket) on two servers started side by side, one with recordings on and one with them off
 * (PTYDECK_RECORDING=off; the timeline runs on both). Paired rounds, so both see the same machine.
 * The target is a ratio of at least 0.9.
 */
const SizeMiB = 128;
const QuickSizeMiB = 4;
const Rounds = 2;

export const recordingCase: BenchCase = {
  id: 'recording',
  title: 'Recording on against off',
  run: runRecording,
};

async function runRecording(ctx: CaseContext): Promise<CaseOutcome> {
  const size = (ctx.quick ? QuickSizeMiB : SizeMiB) * MiB;
  const rounds = ctx.quick ? 1 : Rounds;
  const payload = writePayload(ctx.workDir, size);
  const timeoutMs = 30_000 + (payload.expectedBytes / (2 * MiB)) * 1000;
  // Caps well above the payload, so every byte is recorded in every round.
  const caps = { PTYDECK_RECORDING_MAX_BYTES: String(4 * size + 64 * MiB), PTYDECK_RECORDINGS_TOTAL_BYTES: String(16 * size + 256 * MiB) };
  const off = await startServer({ PTYDECK_RECORDING: 'off' });
  const on = await startServer({ PTYDECK_RECORDING: 'on', ...caps });
  const notes: string[] = [];
  try {
    if (!ctx.quick) {
      const warm = writePayload(ctx.workDir, 4 * MiB, 2);
      await serverRun(off, 'aio-binary', warm, timeoutMs);
      await serverRun(on, 'aio-binary', warm, timeoutMs);
    }
    const runs = await pairedRounds(
      rounds,
      async () => {
        const r = await serverRun(off, 'aio-binary', payload, timeoutMs);
        ctx.log(`  recording off: ${r.result.ok ? `${r.result.mibPerSec.toFixed(0)} MiB/s` : describeFailure(r.result)} (server CPU ${Math.round(r.serverCpuMs ?? 0)} ms)`);
        return r;
      },
      async () => {
        const r = await serverRun(on, 'aio-binary', payload, timeoutMs);
        ctx.log(`  recording on: ${r.result.ok ? `${r.result.mibPerSec.toFixed(0)} MiB/s` : describeFailure(r.result)} (server CPU ${Math.round(r.serverCpuMs ?? 0)} ms)`);
        return r;
      },
    );
    const caseName = '8. Recording';
    const rate = (rs: typeof runs.ours): number[] => rs.map((r) => (r.result.ok ? r.result.mibPerSec : Number.NaN));
    for (const r of [...runs.ours, ...runs.baseline]) if (!r.result.ok) notes.push(`${caseName}: ${describeFailure(r.result)}.`);
    const castBytes = dirBytes(join(on.home, 'recordings'));
    const perMiB = (rs: typeof runs.ours): string => `${fmtMs(median(rs.map((r) => r.serverCpuMs ?? Number.NaN)) / (size / MiB))}/MiB`;
    const rows: Row[] = [
      {
        case: caseName,
        figure: `${size / MiB} MiB \`cat\` → AIO binary WebSocket, recording on (baseline: recording off, same run) (MiB/s)`,
        ours: runs.ours.some((r) => !r.result.ok) ? 'FAILED' : fmtMiBs(median(rate(runs.ours))),
        baseline: runs.baseline.some((r) => !r.result.ok) ? 'FAILED' : fmtMiBs(median(rate(runs.baseline))),
        ratio: fmtRatio(pairedRatio(rate(runs.ours), rate(runs.baseline))),
      },
      {
        case: caseName,
        figure: 'server CPU per MiB (baseline: recording off); recording bytes written for all rounds',
        ours: `${perMiB(runs.ours)}; ${fmtMiB(castBytes / MiB)}`,
        baseline: perMiB(runs.baseline),
        ratio: '—',
      },
    ];
    return { rows, notes };
  } finally {
    await Promise.all([off.stop(), on.stop()]);
  }
}

function dirBytes(dir: string): number {
  try {
    return readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  } catch {
    return 0;
  }
}
