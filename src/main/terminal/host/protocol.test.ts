import { expect, test } from 'vitest';
import { FrameDecoder, FrameType, handleFrame, outputHeader, ProtocolError, readU64, writeU64 } from './protocol';

/** Frames survive any split the socket may make, and OUTPUT payloads are never reassembled. */
test('frames split at every byte boundary decode the same; output payloads arrive in pieces with their offsets', () => {
  const payload = Buffer.from('hello, offsets');
  const stream = Buffer.concat([handleFrame(FrameType.Input, 7, Buffer.from('abc')), outputHeader(3, 2 ** 40 + 5, payload.length), payload, handleFrame(FrameType.Release, 9)]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const frames: [FrameType, string][] = [];
    const out: [number, number, string][] = [];
    const d = new FrameDecoder({ frame: (t, b) => frames.push([t, b.toString('hex')]), output: (h, o, b) => out.push([h, o, b.toString()]) });
    d.push(stream.subarray(0, cut));
    d.push(stream.subarray(cut));
    expect(frames).toEqual([
      [FrameType.Input, handleFrame(FrameType.Input, 7, Buffer.from('abc')).subarray(5).toString('hex')],
      [FrameType.Release, handleFrame(FrameType.Release, 9).subarray(5).toString('hex')],
    ]);
    // Pieces of the payload, each at its own offset, adding up to the whole.
    expect(out.map((o) => o[2]).join('')).toBe('hello, offsets');
    let at = 2 ** 40 + 5;
    for (const [h, o, text] of out) {
      expect(h).toBe(3);
      expect(o).toBe(at);
      at += text.length;
    }
  }
});

test('a frame longer than the limit, or empty, is a protocol error', () => {
  const d = new FrameDecoder({ frame: () => undefined }, 1024);
  expect(() => d.push(Buffer.from([0x01, 0x08, 0x00, 0x00, FrameType.Input]))).toThrow(ProtocolError);
  const e = new FrameDecoder({ frame: () => undefined });
  expect(() => e.push(Buffer.from([0, 0, 0, 0, 0]))).toThrow(ProtocolError);
});

test('u64 offsets round-trip up to 2^53', () => {
  const b = Buffer.alloc(8);
  for (const v of [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1]) {
    writeU64(b, v, 0);
    expect(readU64(b, 0)).toBe(v);
  }
});

test('chunks lent from one reused read buffer decode as the same frames: pieces of a header or body are copied before the next read', () => {
  const payload = Buffer.from('x'.repeat(300));
  const stream = Buffer.concat([handleFrame(FrameType.Input, 7, Buffer.from('a longer control body')), outputHeader(3, 99, payload.length), payload, handleFrame(FrameType.Release, 9)]);
  for (const size of [1, 3, 7, 16, 50]) {
    const frames: string[] = [];
    let out = '';
    const d = new FrameDecoder({ frame: (t, b) => frames.push(`${t}:${b.toString('hex')}`), output: (_h, _o, b) => (out += b.toString()) });
    const readBuffer = Buffer.alloc(size);
    for (let at = 0; at < stream.length; at += size) {
      const n = stream.copy(readBuffer, 0, at, at + size);
      d.push(readBuffer.subarray(0, n));
      readBuffer.fill(0xee); // the next read lands here
    }
    expect(frames).toEqual([
      `${FrameType.Input}:${handleFrame(FrameType.Input, 7, Buffer.from('a longer control body')).subarray(5).toString('hex')}`,
      `${FrameType.Release}:${handleFrame(FrameType.Release, 9).subarray(5).toString('hex')}`,
    ]);
    expect(out).toBe(payload.toString());
  }
});
