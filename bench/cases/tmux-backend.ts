import { spawnSync } from 'node:child_process';
import type { BenchCase, CaseContext, CaseOutcome } from '../lib/case';
import { closeSession } from '../lib/sessions';
import { startServer } from '../lib/server';
import { makeEchoCase } from './echo';
import { makeRoundTripCase } from './round-trip';
import { createRows, measureCreates } from './scale';
import { makeThroughputCase } from './throughput';

/**
 * The same figures, smaller, with the tmux backend (AIO_SHELL_BACKEND=tmux: sessions that outlive the
 * server, whose output reaches it through tmux's pipe-pane and segment files instead of the PTY).
 * The main table pins node-pty; this shows what choosing durability costs. Skipped without tmux.
 */
const LABEL = 'tmux backend';

export const tmuxBackendCase: BenchCase = {
  id: 'tmux',
  title: 'tmux backend',
  async run(ctx: CaseContext): Promise<CaseOutcome> {
    const version = spawnSync('tmux', ['-V'], { encoding: 'utf8' });
    if (version.status !== 0) {
      return { rows: [{ case: `(${LABEL})`, figure: 'every tmux figure', ours: 'skipped: no tmux on this machine', baseline: '—', ratio: '—' }], notes: [] };
    }
    const parts = [
      makeThroughputCase({ backend: 'tmux', label: LABEL, doors: ['aio-binary'], sizeMiB: 32, quickSizeMiB: 2, rounds: 2 }),
      makeEchoCase({ backend: 'tmux', label: LABEL, keys: 200, quickKeys: 20, paces: [10, 0] }),
      makeRoundTripCase({ backend: 'tmux', label: LABEL, execs: 100, sends: 0 }),
    ];
    const rows = [];
    const notes = [];
    for (const part of parts) {
      ctx.log(`# ${part.title}`);
      const outcome = await part.run(ctx);
      rows.push(...outcome.rows);
      notes.push(...outcome.notes);
    }
    ctx.log(`# session creation (${LABEL})`);
    const srv = await startServer({ AIO_SHELL_BACKEND: 'tmux' });
    const ids: string[] = [];
    try {
      const creates = await measureCreates(srv, ids, ctx.quick ? 2 : 10, 2, 'tmux');
      rows.push(...createRows(`4. Scale (${LABEL})`, creates, ids.length));
    } finally {
      for (const id of ids) await closeSession(srv, id);
      await srv.stop();
    }
    notes.push(`tmux backend figures ran with ${version.stdout.trim()}.`);
    return { rows, notes };
  },
};
