import { closeSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';

/**
 * Credentials that may arrive in the server's environment (PTYDECK_TOKEN), read once at start and then
 * removed from it for good.
 *
 * Removing a variable from `process.env` is not enough: the kernel serves /proc/<pid>/environ from the
 * block the process was started with, not from libc's live table, and every session's shell can read
 * /proc/$PPID/environ of its parent, the server. Node 20 has no execve to start over without it, so the
 * variable's bytes in that block are overwritten in place, through /proc/self/mem (what setproctitle
 * does to argv, and Node's own process.title setter). Once `unsetenv` has dropped libc's pointer to
 * them, nothing reads those bytes again.
 *
 * Best effort and Linux only: elsewhere (or where /proc/self/mem is not writable) the variable is still
 * gone from process.env and from every child's environment (sanitizedEnvironment in terminal/shell-integration.ts), but a same-user process may
 * read the start-up block; SECURITY.md says so. Processes above the server (the shell or npm that
 * exported the variable) keep it in theirs: that is outside what the server can change.
 */
export const SECRET_VARIABLES = ['PTYDECK_TOKEN', 'PTYDECK_AGENT_TOKEN'] as const;

/** Secrets taken so far: a later call (a second loadConfig) still gets them, from here. */
const taken: Record<string, string> = {};

/** A copy of the environment with the secrets' values; the process itself no longer holds them anywhere. */
export function environmentWithSecretsTaken(names: readonly string[] = SECRET_VARIABLES): NodeJS.ProcessEnv {
  const present = names.filter((n) => process.env[n] !== undefined);
  for (const n of present) {
    taken[n] = process.env[n]!;
    delete process.env[n];
  }
  if (present.length) scrubStartupEnvironment(present);
  return { ...process.env, ...taken };
}

/** Field numbers (1-based, proc(5)) of the environment block's bounds in /proc/self/stat. */
const EnvStartField = 50;
const EnvEndField = 51;

/** Overwrites `NAME=value` entries of the start-up environment block with NUL bytes. Returns how many. */
function scrubStartupEnvironment(names: readonly string[]): number {
  if (process.platform !== 'linux') return 0;
  let bounds: { start: number; end: number };
  try {
    const stat = readFileSync('/proc/self/stat', 'latin1');
    // Fields after the command name (which may hold spaces) start at field 3.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    bounds = { start: Number(rest[EnvStartField - 3]), end: Number(rest[EnvEndField - 3]) };
  } catch {
    return 0;
  }
  if (!Number.isSafeInteger(bounds.start) || !Number.isSafeInteger(bounds.end) || bounds.end <= bounds.start) return 0;
  let fd: number;
  try {
    fd = openSync('/proc/self/mem', 'r+');
  } catch {
    return 0;
  }
  try {
    const block = Buffer.alloc(bounds.end - bounds.start);
    if (readSync(fd, block, 0, block.length, bounds.start) !== block.length) return 0;
    let scrubbed = 0;
    let entry = 0;
    while (entry < block.length) {
      let end = block.indexOf(0, entry);
      if (end < 0) end = block.length;
      const eq = block.indexOf(0x3d /* = */, entry);
      if (eq > entry && eq < end && names.includes(block.toString('latin1', entry, eq))) {
        writeSync(fd, Buffer.alloc(end - entry), 0, end - entry, bounds.start + entry);
        scrubbed++;
      }
      entry = end + 1;
    }
    return scrubbed;
  } catch {
    return 0;
  } finally {
    closeSync(fd);
  }
}
