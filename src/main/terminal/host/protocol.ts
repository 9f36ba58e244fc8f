import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The PTY host's wire protocol: length-prefixed binary frames over a unix socket private to the user.
 * No HTTP, no JSON on the data path; JSON only in rare control frames (spawn, the session list).
 *
 *   frame  = u32 length (of type + body, little-endian) · u8 type · body
 *   u64    = two u32 halves, little-endian (offsets stay below 2^53, so a JS number holds them exactly)
 *
 * Handshake (nothing else is accepted before it ends):
 *   host   -> CHALLENGE  "PTYDECKH" · u16 version · 32 random bytes
 *   client -> AUTH       u16 version · HMAC-SHA256(secret, challenge)   (the secret is a 0600 file)
 *   host   -> WELCOME    JSON {pid, sessions: HostedSessionInfo[]}
 *
 * After it, the client drives:
 *   SPAWN     u32 handle · JSON SpawnRequest     start a terminal; `handle` is the client's name for it
 *   ATTACH    u32 handle · u64 from · id         stream a running session's output from this offset
 *   INPUT     u32 handle · bytes
 *   RESIZE    u32 handle · u16 cols · u16 rows
 *   KILL      u32 handle · u8 signal number       the shell itself, the PTY's way (node-pty kill)
 *   RECORD    u32 handle · JSON                   what a restart needs to take the session back
 *   RELEASE   u32 handle                          closed for good: end the shell if need be, forget it
 *   SYNC      u32 handle · u32 token              answer SYNCED once every byte the PTY holds now is sent
 *   FLOW      u32 handle · u8 hold                a slow client of the server's: hold the PTY back (1) or not (0)
 *   KEEP      u32 handle · u64 from               the server's clients may still want every byte from here on:
 *                                                 evict none of them (pause the PTY instead) while attached
 *   SHUTDOWN                                      end every session and exit
 * and the host answers:
 *   SPAWNED   u32 handle · u32 pid · f64 start time (clock ticks), or u32 0 · UTF-8 error
 *   OUTPUT    u32 handle · u64 offset · bytes     every output frame says where its bytes sit in the log
 *   EXIT      u32 handle · i32 exit code (-1: none) · i32 signal (0: none)
 *   SYNCED    u32 handle · u32 token              (after the OUTPUT frames it vouches for)
 *   INPUTSTATE u32 handle · u64 taken · u32 waiting  input bytes received on this handle so far, and
 *                                                 those still waiting for the program to read them
 *                                                 (after INPUT frames, and as the wait drains)
 * The WELCOME says `inputState: true` when the host sends INPUTSTATE (a host started by an earlier
 * version does not, and a client ignores frame types it does not know): that is how the server refuses
 * input for a program that stopped reading (INPUT_BACKLOG), as it does for its own terminals. It says
 * `keep: true` when the host takes KEEP (a host refuses frame types it does not know, so a client sends
 * none to one that does not say so).
 *
 * Frames on one connection are handled in order, so INPUT may follow SPAWN at once: the host has the
 * terminal by the time it reads the INPUT.
 */
export const HostProtocol = {
  Magic: Buffer.from('PTYDECKH', 'latin1'),
  Version: 1,
  ChallengeBytes: 32,
  /** A control frame (JSON) or an input frame larger than this is a protocol error, not a big request. */
  MaxFrameBytes: 8 * 1024 * 1024,
} as const;

export const enum FrameType {
  Challenge = 1,
  Auth = 2,
  Welcome = 3,
  Spawn = 10,
  Attach = 11,
  Input = 12,
  Resize = 13,
  Kill = 14,
  Record = 15,
  Release = 16,
  Shutdown = 17,
  Sync = 18,
  Flow = 19,
  Keep = 20,
  Spawned = 30,
  Output = 31,
  Exit = 32,
  Synced = 33,
  InputState = 34,
}

/** Bytes before an OUTPUT frame's payload: length, type, handle, offset. */
export const OutputHeaderBytes = 4 + 1 + 4 + 8;

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** What the host knows about one of its sessions, as the WELCOME frame lists it. */
export interface HostedSessionInfo {
  id: string;
  pid: number;
  startTime: number | null;
  /** The oldest output byte the host still holds, and one past the newest. */
  logStart: number;
  logEnd: number;
  exit: { exitCode: number | null; signal: number | null } | null;
  /** What the server recorded about the session (owner, settings, marker nonce, environment tag). */
  record: unknown;
}

export interface SpawnRequest {
  id: string;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
  /** The host keeps this many bytes of output for a server that reconnects. */
  logBytes: number;
  /** The server's memory budget: the host holds its logs to the same one (the latest spawn's wins). */
  memoryBudgetBytes?: number;
  record: unknown;
}

export function writeU64(buf: Buffer, value: number, at: number): void {
  buf.writeUInt32LE(value % 0x1_0000_0000, at);
  buf.writeUInt32LE(Math.floor(value / 0x1_0000_0000), at + 4);
}

export function readU64(buf: Buffer, at: number): number {
  return buf.readUInt32LE(at) + buf.readUInt32LE(at + 4) * 0x1_0000_0000;
}

/** One frame: header and body in one buffer (control frames, input: small). */
export function frame(type: FrameType, body: Buffer = Buffer.alloc(0)): Buffer {
  const out = Buffer.allocUnsafe(5 + body.length);
  out.writeUInt32LE(1 + body.length, 0);
  out[4] = type;
  body.copy(out, 5);
  return out;
}

export function handleFrame(type: FrameType, handle: number, rest: Buffer = Buffer.alloc(0)): Buffer {
  const out = Buffer.allocUnsafe(9 + rest.length);
  out.writeUInt32LE(5 + rest.length, 0);
  out[4] = type;
  out.writeUInt32LE(handle, 5);
  rest.copy(out, 9);
  return out;
}

export function jsonFrame(type: FrameType, handle: number | null, value: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(value), 'utf8');
  return handle === null ? frame(type, json) : handleFrame(type, handle, json);
}

/** The header of an OUTPUT frame; the payload is written after it as it is (never copied into it). */
export function outputHeader(handle: number, offset: number, payloadBytes: number): Buffer {
  const out = Buffer.allocUnsafe(OutputHeaderBytes);
  out.writeUInt32LE(OutputHeaderBytes - 4 + payloadBytes, 0);
  out[4] = FrameType.Output;
  out.writeUInt32LE(handle, 5);
  writeU64(out, offset, 9);
  return out;
}

export function challengeFrame(challenge: Buffer): Buffer {
  const body = Buffer.allocUnsafe(HostProtocol.Magic.length + 2 + challenge.length);
  HostProtocol.Magic.copy(body, 0);
  body.writeUInt16LE(HostProtocol.Version, HostProtocol.Magic.length);
  challenge.copy(body, HostProtocol.Magic.length + 2);
  return frame(FrameType.Challenge, body);
}

export function authProof(secret: Buffer, challenge: Buffer): Buffer {
  return createHmac('sha256', secret).update(challenge).digest();
}

export function authFrame(secret: Buffer, challenge: Buffer): Buffer {
  const body = Buffer.allocUnsafe(2 + 32);
  body.writeUInt16LE(HostProtocol.Version, 0);
  authProof(secret, challenge).copy(body, 2);
  return frame(FrameType.Auth, body);
}

/** True when an AUTH body proves knowledge of the secret for this challenge. */
export function checkAuth(body: Buffer, secret: Buffer, challenge: Buffer): boolean {
  if (body.length !== 34 || body.readUInt16LE(0) !== HostProtocol.Version) return false;
  return timingSafeEqual(body.subarray(2), authProof(secret, challenge));
}

/** Parses a CHALLENGE body; null when it is not ptydeck's host speaking this version. */
export function parseChallenge(body: Buffer): Buffer | null {
  const m = HostProtocol.Magic;
  if (body.length !== m.length + 2 + HostProtocol.ChallengeBytes) return null;
  if (!body.subarray(0, m.length).equals(m) || body.readUInt16LE(m.length) !== HostProtocol.Version) return null;
  return body.subarray(m.length + 2);
}

export interface FrameSink {
  /** A whole frame other than OUTPUT. */
  frame(type: FrameType, body: Buffer): void;
  /**
   * Part of an OUTPUT frame's payload, as it arrives: its bytes start at `offset` in the session's log.
   * `bytes` is lent for the call only (a view of the read buffer, which the next read fills again).
   */
  output?(handle: number, offset: number, bytes: Buffer): void;
}

/**
 * Splits a byte stream into frames. OUTPUT payloads (when the sink takes them) are handed on piece by
 * piece as the socket delivers them, so a large frame is never reassembled (no copy on the hot path).
 * Anything malformed throws ProtocolError; the caller drops the connection.
 */
export class FrameDecoder {
  private parts: Buffer[] = [];
  private held = 0;
  private streaming: { handle: number; offset: number; left: number } | null = null;

  constructor(
    /** Replaceable: a client swaps in its router once the handshake is over, mid-stream. */
    public sink: FrameSink,
    private readonly maxFrameBytes: number = HostProtocol.MaxFrameBytes,
  ) {}

  push(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      const s = this.streaming;
      if (s) {
        const n = Math.min(s.left, chunk.length - pos);
        const offset = s.offset;
        s.offset += n;
        s.left -= n;
        if (s.left === 0) this.streaming = null;
        this.sink.output!(s.handle, offset, chunk.subarray(pos, pos + n));
        pos += n;
        continue;
      }
      // Gather the 5-byte header, then (for OUTPUT) the 12 bytes after it, else the whole body. A copy:
      // the chunk's memory may be read into again before the rest arrives.
      const need = this.needed();
      const take = Math.min(need - this.held, chunk.length - pos);
      this.parts.push(Buffer.from(chunk.subarray(pos, pos + take)));
      this.held += take;
      pos += take;
      if (this.held === need) this.complete();
    }
  }

  private gathered(): Buffer {
    if (this.parts.length !== 1) this.parts = [Buffer.concat(this.parts, this.held)];
    return this.parts[0];
  }

  private needed(): number {
    if (this.held < 5) return 5;
    const head = this.gathered();
    const length = head.readUInt32LE(0);
    if (head[4] === FrameType.Output && this.sink.output) return OutputHeaderBytes;
    return 4 + length;
  }

  private complete(): void {
    const buf = this.gathered();
    const length = buf.readUInt32LE(0);
    const type = buf[4] as FrameType;
    if (buf.length === 5) {
      if (length < 1 || length > this.maxFrameBytes) throw new ProtocolError(`frame length ${length} out of bounds`);
      if (type === FrameType.Output && this.sink.output && length < OutputHeaderBytes - 4) throw new ProtocolError('short output frame');
      if (length === 1) this.finish(type, Buffer.alloc(0));
      return;
    }
    if (type === FrameType.Output && this.sink.output && buf.length === OutputHeaderBytes) {
      const left = length - (OutputHeaderBytes - 4);
      const handle = buf.readUInt32LE(5);
      const offset = readU64(buf, 9);
      this.reset();
      if (left > 0) this.streaming = { handle, offset, left };
      return;
    }
    this.finish(type, Buffer.from(buf.subarray(5)));
  }

  private finish(type: FrameType, body: Buffer): void {
    this.reset();
    this.sink.frame(type, body);
  }

  private reset(): void {
    this.parts = [];
    this.held = 0;
  }
}
