import { pairedRounds, type BenchCase, type CaseContext, type CaseOutcome } from '../lib/case';
import { spawnMarkerShell, type MarkerShell } from '../lib/direct-pty';
import { closeSession, createSession, execTrue, setFloor, typeInto, waitForPrompt } from '../lib/sessions';
import { startServer, type BenchBackend, type BenchServer } from '../lib/server';
import { median, nowMs } from '../lib/stats';
import { latencyRows, type Row } from '../lib/table';

/**
 * Case 3, command round trips.
 *
 * `exec true` over AIO v2 REST, one call after another. Baseline: an interactive bash on node-pty whose
 * prompt is a marker; type `true`, wait for the marker. That is the shell's own round trip (typing, the
 * fork of nothing, the next prompt) without HTTP, JSON, ^E^U, shell-integration markers or rendering.
 *
 * `send` of a line that prompts at once (`read -p 'x? ' v`), until the answer says `stdin_read`.
 * Baseline: the same line typed on node-pty, until the prompt `x? ` arrives: the earliest moment anyone
 * could know that the program waits (the server must then still prove it from /proc).
 */
export interface RoundTripOptions {
  backend: BenchBackend;
  label: string;
  execs: number;
  sends: number;
}

export function makeRoundTripCase(opts: RoundTripOptions): BenchCase {
  return {
    id: opts.backend === 'host' ? 'round-trip' : `round-trip-${opts.backend}`,
    title: `Command round trip (${opts.label})`,
    run: (ctx) => runRoundTrip(ctx, opts),
  };
}

export const roundTripCase = makeRoundTripCase({ backend: 'host', label: 'PTY host backend', execs: 300, sends: 100 });

async function runRoundTrip(ctx: CaseContext, opts: RoundTripOptions): Promise<CaseOutcome> {
  const rounds = ctx.quick ? 2 : 3;
  const execsPerRound = Math.ceil((ctx.quick ? 30 : opts.execs) / rounds);
  const sendsPerRound = Math.ceil((ctx.quick ? Math.min(4, opts.sends) : opts.sends) / rounds);
  const caseName = `3. Command round trip${opts.backend === 'host' ? '' : ` (${opts.label})`}`;
  const srv = await startServer({ AIO_SHELL_BACKEND: opts.backend });
  const rows: Row[] = [];
  try {
    const id = await createSession(srv, `rt-${Date.now()}`);
    // `send` as the person (admin token) needs the floor to let a person type.
    await setFloor(srv, id, 'type');
    await waitForPrompt(srv, id);
    const sh = await spawnMarkerShell();
    try {
      // Warm-up: JIT, keep-alive connection, first-use allocations on both sides.
      for (let i = 0; i < 10; i++) {
        await execTrue(srv, id);
        await typeAndWait(sh, 'true\r', sh.prompt);
      }
      const exec = await pairedRounds(
        rounds,
        () => timeMany(execsPerRound, () => typeAndWait(sh, 'true\r', sh.prompt)),
        () => timeMany(execsPerRound, () => execTrue(srv, id)),
      );
      rows.push(...latencyRows(caseName, `\`exec true\`, AIO v2 REST, ${exec.ours.flat().length} calls`, exec));
      ctx.log(`  exec true: ours p50 ${median(exec.ours.flat()).toFixed(2)} ms; marker shell p50 ${median(exec.baseline.flat()).toFixed(2)} ms`);

      if (sendsPerRound === 0) return { rows, notes: [] };
      const send = await pairedRounds(
        rounds,
        () => timeMany(sendsPerRound, () => directPrompt(sh)),
        () => timeMany(sendsPerRound, () => sendUntilStdinRead(srv, id)),
      );
      rows.push(...latencyRows(caseName, `\`send\` → \`stdin_read\` (\`read -p 'x? ' v\`), ${send.ours.flat().length} sends`, send));
      ctx.log(`  send→stdin_read: ours p50 ${median(send.ours.flat()).toFixed(1)} ms; prompt on node-pty p50 ${median(send.baseline.flat()).toFixed(2)} ms`);
    } finally {
      await sh.kill();
      await closeSession(srv, id);
    }
  } finally {
    await srv.stop();
  }
  return { rows, notes: [] };
}

/** Runs `op` `n` times one after another; the milliseconds each took (the untimed `reset` runs between). */
async function timeMany(n: number, op: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = nowMs();
    const reset = await op();
    out.push(typeof reset === 'number' ? reset : nowMs() - t0);
  }
  return out;
}

function typeAndWait(sh: MarkerShell, text: string, needle: string): Promise<void> {
  const seen = sh.waitFor(needle);
  sh.write(text);
  return seen;
}

/** The baseline of a send: the time until `x? ` is on node-pty's output; then answer it (untimed). */
async function directPrompt(sh: MarkerShell): Promise<number> {
  const t0 = nowMs();
  // At the start of a line (after the echo's CR): the echoed command contains "x? " too.
  await typeAndWait(sh, "read -p 'x? ' v\r", "\rx? ");
  const ms = nowMs() - t0;
  await typeAndWait(sh, 'y\r', sh.prompt);
  return ms;
}

/** One `send` until it answers; then the prompt is answered and the shell waited for (untimed). */
async function sendUntilStdinRead(srv: BenchServer, id: string): Promise<number> {
  const t0 = nowMs();
  const res = await srv.api('POST', `/api/sessions/${id}/send`, { text: "read -p 'x? ' v", timeout_ms: 10_000 });
  const ms = nowMs() - t0;
  if (res.status !== 200) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`);
  if (res.body.wait_reason !== 'stdin_read') throw new Error(`send answered wait_reason ${res.body.wait_reason}, not stdin_read (${JSON.stringify(res.body).slice(0, 300)})`);
  await typeInto(srv, id, 'y\r');
  await waitForPrompt(srv, id);
  return ms;
}
