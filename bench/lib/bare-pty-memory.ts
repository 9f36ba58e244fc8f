import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The memory baseline for idle sessions: a bare Node process that holds `count` interactive bashes on
 * node-pty (each with a data listener, as any server must have) and nothing else. Its RSS grows by what
 * a PTY costs Node at the least; the shells themselves are other processes, as for the server.
 * Run as a separate process, so the bench's own heap is not in the figure.
 */
const SCRIPT = `
const fs = require('node:fs');
const pty = require(process.argv[2]);
const count = Number(process.argv[3]);
const rc = process.argv[4];
const rss = () => Number(/VmRSS:\\s*(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'latin1'))[1]);
const open = () => new Promise((resolve) => {
  const p = pty.spawn('/bin/bash', ['--noprofile', '--rcfile', rc, '-i'], { name: 'xterm-256color', cols: 120, rows: 40, cwd: '/tmp', env: process.env, encoding: null });
  let seen = '';
  const d = p.onData((b) => { seen += b.toString('latin1'); if (seen.includes('@@BENCH-PROMPT@@')) { d.dispose(); p.onData(() => undefined); resolve(p); } });
});
(async () => {
  // Warm-up, so that loading code and first-use allocations are not charged to the sessions.
  for (const p of await Promise.all([open(), open()])) p.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 500));
  const before = rss();
  const held = [];
  for (let i = 0; i < count; i++) held.push(await open());
  await new Promise((r) => setTimeout(r, 1000));
  const after = rss();
  process.stdout.write(JSON.stringify({ before, after }));
  for (const p of held) p.kill('SIGKILL');
  setTimeout(() => process.exit(0), 200);
})();
`;

export async function barePtyMemory(workDir: string, count: number): Promise<{ beforeKiB: number; afterKiB: number }> {
  const script = join(workDir, 'bare-pty-memory.cjs');
  const rc = join(workDir, 'bare-pty-bashrc');
  writeFileSync(script, SCRIPT);
  writeFileSync(rc, "PS1='@@BENCH-PROMPT@@ '\nunset PROMPT_COMMAND\n");
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [script, require.resolve('node-pty'), String(count), rc], { timeout: 120_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
  const { before, after } = JSON.parse(out) as { before: number; after: number };
  return { beforeKiB: before, afterKiB: after };
}
