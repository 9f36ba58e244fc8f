import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { approvalsCase } from './cases/approvals';
import { echoCase } from './cases/echo';
import { floodCase } from './cases/flood';
import { overviewRenderCase } from './cases/overview-render';
import { recordingCase } from './cases/recording';
import { remotesCase } from './cases/remotes';
import { roundTripCase } from './cases/round-trip';
import { scaleCase } from './cases/scale';
import { restartCase } from './cases/restart';
import { throughputCase, throughputNativeCase } from './cases/throughput';
import { tmuxBackendCase } from './cases/tmux-backend';
import { viewerRenderCase } from './cases/viewer-render';
import type { BenchCase, CaseContext } from './lib/case';
import { abort, cleanupAll, cleanupAllSync, onCleanup } from './lib/cleanup';
import { describeMachine, loadNow, machineCell, processCount } from './lib/machine';
import { writeReport } from './lib/report';
import { markdownTable, type Row } from './lib/table';

/**
 * `npm run bench` (full, about ten minutes) or `npm run bench -- --quick` (every case, small, under a
 * minute: a CI smoke test). Runs each case against a server it starts itself, prints one Markdown table
 * and writes docs/PERFORMANCE.md (a quick run writes bench/.tmp/PERFORMANCE-quick.md instead, unless
 * --write). `--only throughput,echo` runs some cases (and then writes nothing unless --write is given,
 * so a partial run never replaces the full report).
 *
 * The bench asserts no speed: it measures. A lost byte, or a case that could not run, makes a figure
 * read FAILED and the run exit 1.
 */
// The viewer cases are last on purpose: the viewer is the part most likely to be in flux.
const CASES: BenchCase[] = [throughputCase, throughputNativeCase, echoCase, roundTripCase, scaleCase, floodCase, restartCase, tmuxBackendCase, recordingCase, remotesCase, approvalsCase, viewerRenderCase, overviewRenderCase];

const REPORT = join(__dirname, '..', 'docs', 'PERFORMANCE.md');
/** A quick run is a smoke test: its figures are not worth quoting, so it does not replace the report. */
const QUICK_REPORT = join(__dirname, '.tmp', 'PERFORMANCE-quick.md');

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { quick: { type: 'boolean', default: false }, only: { type: 'string' }, write: { type: 'boolean', default: false } },
    strict: true,
  });
  const quick = values.quick!;
  const only = values.only ? new Set(values.only.split(',').map((s) => s.trim())) : null;
  if (only) {
    const unknown = [...only].filter((id) => !CASES.some((c) => c.id === id));
    if (unknown.length) throw new Error(`unknown case(s) ${unknown.join(', ')}; cases: ${CASES.map((c) => c.id).join(', ')}`);
  }
  const cases = CASES.filter((c) => !only || only.has(c.id));
  const machine = describeMachine();
  const loadAtStart = loadNow();
  const processes = processCount();
  const started = Date.now();
  const workDir = mkdtempSync(join(tmpdir(), 'ptydeck-bench-'));
  onCleanup(
    () => rmSync(workDir, { recursive: true, force: true }),
    () => rmSync(workDir, { recursive: true, force: true }),
  );

  const log = (m: string): void => void process.stderr.write(`${m}\n`);
  log(`bench: ${quick ? 'quick' : 'full'} run on ${machineCell(machine)} (${machine.cpu}), load average ${loadAtStart.toFixed(1)}, ${processes} processes`);
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const c of cases) {
    const t0 = Date.now();
    log(`\n## ${c.title}`);
    const ctx: CaseContext = { quick, workDir, log };
    try {
      const outcome = await c.run(ctx);
      rows.push(...outcome.rows);
      notes.push(...outcome.notes);
    } catch (err) {
      // One broken case must not cost the others their figures.
      const message = (err as Error).message.split('\n')[0];
      log(`bench: case ${c.id} failed: ${(err as Error).stack ?? message}`);
      rows.push({ case: c.title, figure: '(case did not complete)', ours: `FAILED: ${message}`, baseline: '—', ratio: 'n/a' });
      notes.push(`${c.title}: the case did not complete: ${message}`);
    }
    log(`(${c.id}: ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }

  const durationSecs = (Date.now() - started) / 1000;
  const table = markdownTable(rows, machineCell(machine));
  const command = `npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  process.stdout.write(`\n${table}\n\n`);
  log(`bench: done in ${durationSecs.toFixed(0)} s`);
  if (!only || values.write) {
    const target = quick && !values.write ? QUICK_REPORT : REPORT;
    mkdirSync(dirname(target), { recursive: true });
    writeReport(target, { date: new Date(), machine, command, quick, durationSecs, table, notes, load: { start: loadAtStart, end: loadNow() }, processes });
    log(`bench: wrote ${target}`);
  }
  // Nothing here asserts a speed. But a case that could not run, or a door that delivered wrong bytes,
  // is broken, not slow: that fails the run (CI runs --quick as a smoke test).
  const broken = rows.filter((r) => r.ours.startsWith('FAILED'));
  if (broken.length) {
    log(`bench: ${broken.length} figure(s) FAILED: ${broken.map((r) => `${r.case}: ${r.figure}`).join('; ')}`);
    return 1;
  }
  return 0;
}

process.on('exit', cleanupAllSync);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    process.stderr.write(`\nbench: ${sig}, cleaning up\n`);
    abort();
    void cleanupAll().finally(() => process.exit(130));
  });
}

main()
  .then(async (code) => {
    await cleanupAll();
    process.exit(code);
  })
  .catch(async (err) => {
    console.error('bench:', err);
    await cleanupAll();
    process.exit(1);
  });
