import { readFileSync, writeFileSync } from 'node:fs';

/**
 * Memory of one process from /proc/<pid>/status. RSS of the server process alone: the shells are
 * separate processes, so they are not in it.
 */
export function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const text = readFileSync(`/proc/${pid}/status`, 'latin1');
  const m = new RegExp(`^${field}:\\s*(\\d+)\\s*kB`, 'm').exec(text);
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]);
}

export const rssKiB = (pid: number): number => statusKiB(pid, 'VmRSS');

/**
 * Resets the kernel's peak-RSS mark (VmHWM) so that a later read gives the peak of one phase only.
 * Returns false where the kernel refuses (then callers rely on their own sampling).
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** CPU time (user + system) a process has used, in milliseconds. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  // Fields after the command name (which may contain spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / 100; // USER_HZ is 100 on every Linux this runs on
}

/**
 * CPU time the whole machine has spent working (user, nice, system, irq, softirq over every core; not
 * idle, not I/O wait, not time the hypervisor took), in milliseconds: the cost of a stream across every
 * process it passes through, the kernel's share included.
 */
export function machineBusyMs(): number {
  const cpu = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq] = cpu;
  return ((user + nice + system + irq + softirq) * 1000) / 100;
}

/**
 * Waits until a process has used less than `busyPct` of one core over `windowMs` (or `maxMs` passed).
 * Runs wait for the server to settle first, so work left over from one run (a screen catch-up, GC)
 * is not charged to the next. Returns the milliseconds waited.
 */
export async function waitForQuiet(pid: number, opts: { windowMs?: number; busyPct?: number; maxMs?: number } = {}): Promise<number> {
  const windowMs = opts.windowMs ?? 200;
  const busyPct = opts.busyPct ?? 10;
  const maxMs = opts.maxMs ?? 10_000;
  const started = Date.now();
  for (;;) {
    const before = cpuMs(pid);
    await new Promise((r) => setTimeout(r, windowMs));
    const used = cpuMs(pid) - before;
    if ((used / windowMs) * 100 < busyPct || Date.now() - started > maxMs) return Date.now() - started;
  }
}
