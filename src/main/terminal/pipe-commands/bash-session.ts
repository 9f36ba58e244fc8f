import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { CommandStatus } from '../../../shared/types';
import type { Actor } from '../actor';
import type { CommandRecord } from '../commands';
import { InvalidRequestError } from '../manager';
import type { HostFactory, Session } from '../session';
import { findShell } from '../shell-integration';
import { CommandHost, type PipeCommand, type PipeCommandStatus } from './command-host';

/**
 * A bash-API session is an ordinary Session whose process is a CommandHost: listed, owned, limited,
 * watched and closed like any other. This module makes one and finds it again; it also mirrors each
 * command into the session's own command list, so every listing (and the viewer) shows what runs.
 */
const hosts = new WeakMap<Session, CommandHost>();

/** The session's command host, or null when the session is a terminal (or anything else). */
export function commandHostOf(session: Session): CommandHost | null {
  return hosts.get(session) ?? null;
}

/** Largest snapshot script accepted: it is copied into memory and onto disk once per session. */
export const SnapshotMaxBytes = 1024 * 1024;

/** Where bash lives, or null when this machine has none (the bash API then answers 503). */
export function bashBinary(): string | null {
  const shell = findShell();
  return shell.kind === 'bash' ? shell.file : null;
}

/** The `host` of a CreateRequest for a bash-API session. */
export function bashSessionHost(opts: { bash: string; snapshot?: string | null }): HostFactory {
  return (session, env) => {
    const host = new CommandHost({
      bash: opts.bash,
      env,
      log: session.log,
      snapshot: opts.snapshot,
      started: (cmd) => {
        cmd.tag = session.commands.begin(cmd.command);
        session.events.emit('command', { phase: 'started', command: cmd.command, exitCode: null });
      },
      ended: (cmd) => {
        const next = host.current?.tag as CommandRecord | null | undefined;
        session.commands.end(cmd.tag as CommandRecord, shellStatusOf(cmd.status), cmd.exitCode, next ?? null);
        session.events.emit('command', { phase: 'ended', command: cmd.command, exitCode: cmd.exitCode });
      },
    });
    hosts.set(session, host);
    session.events.on('signal', (e) => {
      if (e.delivered) host.noteSignalled(e.targetPgid);
    });
    session.events.on('closed', () => host.dispose());
    return host;
  };
}

/**
 * Lets `by` run `command` on a bash-API session now, if the floor does (FloorRefusedError otherwise), and
 * publishes it as the session's input, as a terminal's exec is: who ran what, for the timeline.
 */
export function admitCommand(session: Session, by: Actor, command: string): void {
  session.authorize(by, 'exec');
  session.events.emit('input', { data: command, by, offset: session.log.end, command });
}

/** The session's command list speaks AIO's terminal statuses; the bash API's map onto them. */
function shellStatusOf(status: PipeCommandStatus): CommandStatus {
  switch (status) {
    case 'running':
      return 'running';
    case 'completed':
      return 'completed';
    case 'timed_out':
      return 'hard_timeout';
    case 'killed':
      return 'terminated';
  }
}

/**
 * Reads a snapshot script (AIO's `snapshot_path`): an absolute path to a regular file of at most
 * SnapshotMaxBytes. Anything else (a directory, a device that never ends, a missing file) is refused,
 * naming the field.
 */
export function readSnapshot(path: string): string {
  if (!isAbsolute(path)) throw new InvalidRequestError(`snapshot_path must be an absolute path (got ${JSON.stringify(path)})`);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new InvalidRequestError(`snapshot_path ${JSON.stringify(path)} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new InvalidRequestError(`snapshot_path ${JSON.stringify(path)} is not a regular file`);
    if (st.size > SnapshotMaxBytes) throw new InvalidRequestError(`snapshot_path ${JSON.stringify(path)} is ${st.size} bytes; the limit is ${SnapshotMaxBytes}`);
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < st.size) {
      const n = readSync(fd, buf, got, st.size - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

export type { PipeCommand };
