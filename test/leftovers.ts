import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Finding the processes a test run left behind.
 *
 * Every test run gets a marker: an environment variable whose value is unique to the run. Every process
 * the run starts inherits it (test workers, servers, shells, tmux servers and their panes, a PTY host),
 * whatever it does to its process group or parent, so after the run /proc/<pid>/environ names exactly
 * the processes this run started: other people's runs on the same machine carry other values.
 *
 * The name must not start with PTYDECK_ or ELECTRON_: ptydeck strips those from the environment of
 * every shell it starts (they may hold credentials), and the marker has to reach the shells.
 */
export const RUN_MARKER = 'PD_TEST_RUN_ID';

/** The marker of this run: inherited from `npm test` (one for vitest and Playwright), else made here. */
export function ensureRunMarker(): string {
  process.env[RUN_MARKER] ||= `${Date.now().toString(36)}-${randomBytes(8).toString('hex')}`;
  return process.env[RUN_MARKER]!;
}

export interface MarkedProcess {
  pid: number;
  ppid: number;
  cmdline: string;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    // gone meanwhile, or another user's
    return null;
  }
}

function parentOf(pid: number): number | null {
  const stat = read(`/proc/${pid}/stat`);
  if (!stat) return null;
  // The command name may hold spaces and parentheses: the fields that follow start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[0] === 'Z' ? null : Number(fields[1]);
}

/** This process and every process above it: they carry the marker too, and are meant to. */
export function selfAndAncestors(pid = process.pid): Set<number> {
  const chain = new Set<number>();
  for (let p: number | null = pid; p && p > 1 && !chain.has(p); p = parentOf(p)) chain.add(p);
  return chain;
}

/** Live processes (zombies excluded: they hold nothing) whose environment carries `value` as the marker. */
export function markedProcesses(value: string, exclude: (p: MarkedProcess) => boolean = () => false): MarkedProcess[] {
  if (process.platform !== 'linux') return [];
  const needle = `${RUN_MARKER}=${value}\0`;
  const found: MarkedProcess[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const env = read(`/proc/${pid}/environ`);
    if (!env || !(env.startsWith(needle) || env.includes(`\0${needle}`))) continue;
    const ppid = parentOf(pid);
    if (ppid === null) continue;
    const p = { pid, ppid, cmdline: (read(`/proc/${pid}/cmdline`) ?? '').split('\0').filter(Boolean).join(' ') };
    if (!exclude(p)) found.push(p);
  }
  return found;
}

/**
 * The run's processes still alive once its tests are done. Processes that are already on their way out
 * get a moment (`settleMs`) to finish; what is still there then has outlived the run. Those are killed
 * (they are this run's, by their marker) and returned, so the caller can fail the run naming them.
 */
export async function collectLeftovers(value: string, exclude: (p: MarkedProcess) => boolean, settleMs = 10_000): Promise<MarkedProcess[]> {
  const deadline = Date.now() + settleMs;
  let left = markedProcesses(value, exclude);
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = markedProcesses(value, exclude);
  }
  for (const p of left) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return left;
}

export function describeLeftovers(left: MarkedProcess[], runner: string): string {
  const lines = left.map((p) => `  pid ${p.pid} (parent ${p.ppid}): ${p.cmdline.slice(0, 200)}`);
  return [
    `${runner}: ${left.length} process(es) started by this test run outlived it (found by ${RUN_MARKER} in their environment; now killed):`,
    ...lines,
    'A test must end everything it starts, also when it fails: close() the servers of startTestServer (test/helpers.ts) and spawnServer (test/server-process.ts), from a hook (afterEach, onTestFinished).',
  ].join('\n');
}

/**
 * Files a run leaves. Every run gets a temporary directory of its own (TMPDIR, inherited by everything
 * it starts, like the marker), so that what servers, hosts and shells put in the temporary directory and
 * never removed is found, said, and removed with the run, instead of piling up in /tmp.
 *
 * vitest calls the global setup once per project and each project's teardown when that project is done,
 * while others may still run: the directory is made by the first setup and removed by the last teardown.
 */
const runTemp = ((globalThis as { __ptydeckRunTemp?: { dir: string; users: number } }).__ptydeckRunTemp ??= { dir: '', users: 0 });

export function useRunTempDir(): void {
  if (runTemp.users++ > 0) return;
  runTemp.dir = mkdtempSync(join(tmpdir(), 'ptydeck-test-run-'));
  process.env.TMPDIR = runTemp.dir;
}

/**
 * The last user of the run's temporary directory removes it, and gets a line naming what was left there
 * (by kind: the name without its random part); null when nothing was, or others still use it.
 */
export function endRunTempDir(runner: string): string | null {
  if (--runTemp.users > 0) return null;
  const dir = runTemp.dir;
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return null;
  }
  rmSync(dir, { recursive: true, force: true });
  if (!names.length) return null;
  const kinds = new Map<string, number>();
  for (const n of names) {
    const kind = n.replace(/[-.][A-Za-z0-9]{6,}$/, '-*');
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  const list = [...kinds].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ×${n}`);
  return `${runner}: the run left ${names.length} entr${names.length === 1 ? 'y' : 'ies'} in its temporary directory (removed now): ${list.join(', ')}`;
}
