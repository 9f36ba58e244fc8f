import { readdirSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem, type as osType } from 'node:os';

/** What a figure was measured on: it means nothing without this. */
export interface Machine {
  cores: number;
  memGiB: number;
  node: string;
  cpu: string;
  os: string;
}

/** The 1-minute load average: on a shared machine, how much else was running weighs on every figure. */
export const loadNow = (): number => loadavg()[0];

/**
 * Processes on the machine. Some server paths scan every process in /proc (the readiness probe, a
 * session's teardown), so their cost depends on this number as much as on the server.
 */
export function processCount(): number {
  try {
    return readdirSync('/proc').filter((n) => n.charCodeAt(0) <= 57).length;
  } catch {
    return Number.NaN;
  }
}

export function describeMachine(): Machine {
  return {
    cores: availableParallelism(),
    memGiB: totalmem() / 1024 ** 3,
    node: process.version,
    cpu: cpus()[0]?.model?.trim() ?? 'unknown CPU',
    os: `${osType()} ${release()}`,
  };
}

/** The short form for the table's machine column. */
export const machineCell = (m: Machine): string => `${m.cores} cores, ${m.memGiB.toFixed(1)} GiB, Node ${m.node}`;
