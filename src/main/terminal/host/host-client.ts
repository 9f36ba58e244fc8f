import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { reportSessionFailure, type ProcessExit } from '../backends/backend';
import { HostConstants } from '../constants';
import { checkSocketPath, hostPaths } from './host-paths';
import { spawnHost } from './launch';
import { TurnWrites } from './turn-writes';
import {
  authFrame,
  FrameDecoder,
  FrameType,
  frame,
  handleFrame,
  jsonFrame,
  parseChallenge,
  ProtocolError,
  readU64,
  writeU64,
  type HostedSessionInfo,
  type SpawnRequest,
} from './protocol';

/**
 * The server's connection to its PTY host. It routes the host's frames to one listener per handle
 * (a handle is this connection's name for a terminal) and turns calls into frames, in order.
 */
export interface HandleListener {
  spawned(pid: number, startTime: number | null, error: string | null): void;
  output(offset: number, bytes: Buffer): void;
  exit(exit: ProcessExit): void;
  /** INPUTSTATE: input bytes the host has received on this handle, and those still waiting to be read. */
  inputState(taken: number, waiting: number): void;
}


export class HostUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HostUnavailableError';
  }
}

export class HostClient {
  private readonly listeners = new Map<number, HandleListener>();
  private nextHandle = 1;
  private closed = false;
  private readonly closeListeners: (() => void)[] = [];
  private readonly syncs = new Map<number, () => void>();
  private nextSync = 1;
  private readonly writes: TurnWrites;

  private constructor(
    private readonly socket: Socket,
    readonly hostPid: number,
    readonly sessions: HostedSessionInfo[],
    decoder: FrameDecoder,
    /** The host reports its waiting input (INPUTSTATE); one started by an earlier version does not. */
    readonly reportsInput: boolean,
    /** The host takes KEEP; one started by an earlier version does not. */
    readonly keeps: boolean,
  ) {
    this.writes = new TurnWrites(socket);
    // From here on, frames go to the handles.
    decoder.sink = {
      frame: (type: FrameType, body: Buffer) => this.onFrame(type, body),
      output: (handle: number, offset: number, bytes: Buffer) => {
        // The hot path: no closure per payload, the same containment as tell's.
        try {
          this.listeners.get(handle)?.output(offset, bytes);
        } catch (err) {
          reportSessionFailure('output', `host handle ${handle}`, err);
        }
      },
    };
    socket.on('close', () => {
      this.closed = true;
      const all = [...this.listeners.values()];
      this.listeners.clear();
      for (const l of all) l.exit({ exitCode: null, signal: null });
      for (const done of this.syncs.values()) done();
      this.syncs.clear();
      for (const l of this.closeListeners) l();
    });
  }

  /**
   * Connects to the host of `home`, starting one if none answers and `start` is true. Null when there
   * is none and `start` is false.
   */
  static async connect(home: string, opts: { start: boolean }): Promise<HostClient | null> {
    const paths = hostPaths(home);
    checkSocketPath(paths.socket);
    const first = await HostClient.tryConnect(home).catch((err: Error) => err);
    if (first instanceof HostClient) return first;
    if (!opts.start) return null;
    spawnHost(home);
    const deadline = Date.now() + HostConstants.StartTimeoutMs;
    let last: Error = first;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      const c = await HostClient.tryConnect(home).catch((err: Error) => err);
      if (c instanceof HostClient) return c;
      last = c;
    }
    throw new HostUnavailableError(`the PTY host did not start (${last.message}); see ${paths.log}`);
  }

  private static tryConnect(home: string): Promise<HostClient> {
    const paths = hostPaths(home);
    return new Promise((resolve, reject) => {
      // Every read lands in this one buffer (ReadBufferBytes): what arrives is handed on, or copied, before
      // the next read. Until the handshake is over the bytes go to its decoder, then to the client's.
      let deliver: (chunk: Buffer) => void = () => undefined;
      const readInto = Buffer.allocUnsafe(HostConstants.ReadBufferBytes);
      const onread = {
        buffer: readInto,
        callback: (n: number): boolean => {
          deliver(readInto.subarray(0, n));
          return true;
        },
      };
      const socket = connect({ path: paths.socket, onread });
      let challenge: Buffer | null = null;
      const fail = (err: Error): void => {
        socket.destroy();
        reject(err);
      };
      const timer = setTimeout(() => fail(new Error('the host did not finish the handshake')), HostConstants.HandshakeTimeoutMs * 2);
      const decoder = new FrameDecoder({
        frame: (type, body) => {
          if (!challenge) {
            challenge = type === FrameType.Challenge ? parseChallenge(body) : null;
            if (!challenge) throw new ProtocolError('the socket does not speak the PTY host protocol');
            // Read fresh each time: a host that restarted wrote a new secret.
            const secret = Buffer.from(readFileSync(paths.secret, 'utf8').trim(), 'hex');
            socket.write(authFrame(secret, challenge));
            return;
          }
          if (type !== FrameType.Welcome) throw new ProtocolError(`unexpected frame ${type} in the handshake`);
          const welcome = JSON.parse(body.toString('utf8')) as { pid: number; sessions: HostedSessionInfo[]; inputState?: unknown; keep?: unknown };
          clearTimeout(timer);
          deliver = () => undefined;
          socket.off('error', fail);
          socket.off('close', onClose);
          const client = new HostClient(socket, welcome.pid, welcome.sessions, decoder, welcome.inputState === true, welcome.keep === true);
          deliver = (chunk: Buffer) => client.onData(decoder, chunk);
          socket.on('error', () => undefined);
          resolve(client);
        },
      });
      const onData = (chunk: Buffer): void => {
        try {
          decoder.push(chunk);
        } catch (err) {
          clearTimeout(timer);
          fail(err as Error);
        }
      };
      const onClose = (): void => {
        clearTimeout(timer);
        reject(new Error('the host closed the connection during the handshake'));
      };
      deliver = onData;
      socket.once('error', fail);
      socket.once('close', onClose);
    });
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  private onData(decoder: FrameDecoder, chunk: Buffer): void {
    try {
      decoder.push(chunk);
    } catch (err) {
      console.error(`ptydeck: the PTY host sent something unreadable (${(err as Error).message}); dropping the connection`);
      this.socket.destroy();
    }
  }

  private onFrame(type: FrameType, body: Buffer): void {
    if (type === FrameType.Synced) {
      const token = body.readUInt32LE(4);
      this.syncs.get(token)?.();
      this.syncs.delete(token);
      return;
    }
    const handle = body.readUInt32LE(0);
    const l = this.listeners.get(handle);
    if (!l) return;
    // Each frame is read whole before its session hears of it: a malformed one is the host's fault and
    // drops the connection (onData), a failure in the session's handling of a good one is not.
    switch (type) {
      case FrameType.Spawned: {
        const pid = body.readUInt32LE(4);
        const error = pid === 0 ? body.subarray(8).toString('utf8') : null;
        const start = pid === 0 ? -1 : body.readDoubleLE(8);
        this.tell(handle, 'start', () => l.spawned(pid, start >= 0 ? start : null, error));
        return;
      }
      case FrameType.InputState:
        if (body.length === 16) {
          const taken = readU64(body, 4);
          const waiting = body.readUInt32LE(12);
          this.tell(handle, 'input state', () => l.inputState(taken, waiting));
        }
        return;
      case FrameType.Exit: {
        const code = body.readInt32LE(4);
        const signal = body.readInt32LE(8);
        this.listeners.delete(handle);
        this.tell(handle, 'exit', () => l.exit({ exitCode: code < 0 || signal ? null : code, signal: signal || null }));
        return;
      }
    }
  }

  /** Hands one session its frame; a failure there is the session's own (reportSessionFailure). */
  private tell(handle: number, what: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      reportSessionFailure(what, `host handle ${handle}`, err);
    }
  }

  /** A new handle whose frames go to `listener`. */
  open(listener: HandleListener): number {
    const handle = this.nextHandle++;
    if (this.closed) queueMicrotask(() => listener.exit({ exitCode: null, signal: null }));
    else this.listeners.set(handle, listener);
    return handle;
  }

  spawn(handle: number, req: SpawnRequest): void {
    this.send(jsonFrame(FrameType.Spawn, handle, req));
  }

  attach(handle: number, id: string, from: number): void {
    const rest = Buffer.allocUnsafe(8 + Buffer.byteLength(id));
    writeU64(rest, from, 0);
    rest.write(id, 8, 'utf8');
    this.send(handleFrame(FrameType.Attach, handle, rest));
  }

  input(handle: number, data: Buffer): void {
    const step = HostConstants.InputFrameBytes;
    for (let i = 0; i < data.length; i += step) this.send(handleFrame(FrameType.Input, handle, data.subarray(i, i + step)));
  }

  resize(handle: number, cols: number, rows: number): void {
    const rest = Buffer.allocUnsafe(4);
    rest.writeUInt16LE(Math.min(cols, 0xffff), 0);
    rest.writeUInt16LE(Math.min(rows, 0xffff), 2);
    this.send(handleFrame(FrameType.Resize, handle, rest));
  }

  kill(handle: number, signal: number): void {
    this.send(handleFrame(FrameType.Kill, handle, Buffer.from([signal])));
  }

  /** Holds the handle's PTY back for a slow client of ours (or lets it go). */
  flow(handle: number, hold: boolean): void {
    this.send(handleFrame(FrameType.Flow, handle, Buffer.from([hold ? 1 : 0])));
  }

  /** Bytes from `from` on may still be wanted by a client of ours: the host evicts none of them. */
  keep(handle: number, from: number): void {
    if (!this.keeps) return;
    const rest = Buffer.allocUnsafe(8);
    writeU64(rest, from, 0);
    this.send(handleFrame(FrameType.Keep, handle, rest));
  }

  record(handle: number, record: unknown): void {
    this.send(jsonFrame(FrameType.Record, handle, record));
  }

  /** Closed for good: the host ends the shell if it still runs and forgets the session. */
  release(handle: number): void {
    this.listeners.delete(handle);
    this.send(handleFrame(FrameType.Release, handle));
  }

  /** Stops routing a handle's frames here (the session is being let go, not ended). */
  forget(handle: number): void {
    this.listeners.delete(handle);
  }

  /** Resolves once the host has sent every byte the handle's PTY held at the call (see SYNC). */
  sync(handle: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    const token = this.nextSync++ >>> 0;
    const rest = Buffer.allocUnsafe(4);
    rest.writeUInt32LE(token, 0);
    return new Promise((resolve) => {
      this.syncs.set(token, resolve);
      this.send(handleFrame(FrameType.Sync, handle, rest));
    });
  }

  shutdownHost(): void {
    this.send(frame(FrameType.Shutdown));
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.socket.end();
  }

  private send(buf: Buffer): void {
    if (!this.closed) this.writes.write(buf);
  }
}
