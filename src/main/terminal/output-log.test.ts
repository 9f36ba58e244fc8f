import { beforeEach, describe, expect, test } from 'vitest';
import { OutputLogConstants } from './constants';
import { LogCursor } from './output-hub';
import { OutputLog } from './output-log';

/** `n` bytes from log offset `from`, each saying where it is, so any range read back can be checked. */
const chunk = (from: number, n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => ((from + i) * 7 + ((from + i) >>> 11)) & 255));

describe('OutputLog', () => {
  test('addresses bytes by absolute offset and reads any range back', () => {
    const log = new OutputLog(1024 * 1024);
    log.append(Buffer.from('hello '));
    log.append(Buffer.from('world'));
    expect(log.start).toBe(0);
    expect(log.end).toBe(11);
    expect(log.read(0).toString()).toBe('hello world');
    expect(log.read(6, 9).toString()).toBe('wor');
    expect(log.indexOf(Buffer.from('wor'), 0)).toBe(6);
  });

  test('stays bounded and drops whole segments from the front', () => {
    const cap = 64 * 1024;
    const log = new OutputLog(cap);
    const chunk = Buffer.alloc(10000);
    let total = 0;
    for (let i = 0; i < 100; i++) {
      chunk.fill(i % 256);
      log.append(chunk);
      total += chunk.length;
      expect(log.retainedBytes).toBeLessThanOrEqual(cap + 256 * 1024);
    }
    expect(log.end).toBe(total);
    expect(log.start).toBeGreaterThan(0);
    expect(log.retainedBytes).toBeGreaterThanOrEqual(cap);
    // The newest bytes are exactly what was appended last.
    expect(log.read(log.end - 10000).equals(Buffer.alloc(10000, 99))).toBe(true);
    expect(log.read(0, 10).length).toBe(0); // long gone: clamped to what is held
  });

  test('chunkAt never copies and stops at segment and channel boundaries', () => {
    const log = new OutputLog(1024 * 1024);
    log.append(Buffer.from('out1'), 1);
    log.append(Buffer.from('err'), 2);
    log.append(Buffer.from('out2'), 1);
    expect(log.chunkAt(0, 100)).toMatchObject({ channel: 1 });
    expect(log.chunkAt(0, 100)!.data.toString()).toBe('out1');
    expect(log.chunkAt(4, 100)!.data.toString()).toBe('err');
    expect(log.chunkAt(4, 100)!.channel).toBe(2);
    expect(log.chunkAt(7, 100)!.data.toString()).toBe('out2');
    expect(log.chunkAt(11, 100)).toBeNull();
  });

  test('cold segments spilled to disk keep their offsets and read back the same; memory holds the hot tail', async () => {
    const log = new OutputLog(8 * 1024 * 1024);
    const chunks: Buffer[] = [];
    for (let i = 0; i < 40; i++) {
      const c = Buffer.alloc(100_000, 97 + (i % 26));
      chunks.push(c);
      log.append(c);
    }
    const all = Buffer.concat(chunks);
    const before = log.residentBytes;
    const freed = log.spillCold(1024 * 1024, Infinity);
    await log.spillsLanded();
    expect(freed).toBeGreaterThan(2 * 1024 * 1024);
    expect(log.residentBytes).toBe(before - freed);
    expect(log.residentBytes).toBeLessThan(1024 * 1024 + 2 * 256 * 1024);
    expect(log.read(0).equals(all)).toBe(true);
    expect(log.read(123_456, 2_345_678).equals(all.subarray(123_456, 2_345_678))).toBe(true);
    // A cursor walks it chunk by chunk across spilled and resident segments alike.
    const walked: Buffer[] = [];
    for (let at = log.start; at < log.end; ) {
      const c = log.chunkAt(at, 64 * 1024)!;
      walked.push(Buffer.from(c.data));
      at += c.data.length;
    }
    expect(Buffer.concat(walked).equals(all)).toBe(true);
    // Appending goes on; eviction drops spilled segments like any other.
    for (let i = 0; i < 100; i++) log.append(Buffer.alloc(100_000, 65));
    expect(log.read(log.end - 10).toString()).toBe('AAAAAAAAAA');
  });

  test('lineStartBefore finds where the last n lines begin, across segments, spilled ones and the front of the log', async () => {
    const log = new OutputLog(1024 * 1024);
    // Lines of every length, so that newlines fall on both sides of segment edges.
    let text = '';
    for (let i = 0; text.length < 1.5 * 1024 * 1024; i++) text += `${'x'.repeat((i * 7919) % 300)}\r\n`;
    text += 'prompt$ ';
    for (let at = 0; at < text.length; at += 5000) log.append(Buffer.from(text.slice(at, at + 5000)));
    log.spillCold(128 * 1024, Infinity);
    await log.spillsLanded();
    const held = log.read(log.start).toString('latin1');
    /** The reference: count newlines back over a copy of what the log holds. */
    const reference = (end: number, n: number, lowest: number): number | null => {
      let at = end - log.start;
      for (let k = 0; k < n; k++) {
        const nl = held.lastIndexOf('\n', at - 1);
        if (nl < 0 || log.start + nl < lowest || at === 0) return null;
        at = nl;
      }
      return log.start + at + 1;
    };
    const ends = [log.end, log.end - 8, log.end - 100_000, log.start + 70_000];
    for (const end of ends) {
      for (const n of [1, 2, 50, 5040, 100_000]) {
        for (const lowest of [0, log.start + 4096, end - 300_000]) expect(log.lineStartBefore(end, n, lowest), `${end} ${n} ${lowest}`).toBe(reference(end, n, lowest));
      }
      // Exactly as many lines as lie above `lowest`, and one more (that newline lies below it).
      for (const lowest of [log.start + 4096, end - 300_000, end - 65_536]) {
        const above = held.slice(Math.max(0, lowest - log.start), end - log.start).split('\n').length - 1;
        expect(log.lineStartBefore(end, above, lowest)).not.toBe(null);
        expect(log.lineStartBefore(end, above + 1, lowest)).toBe(null);
      }
    }
    expect(log.lineStartBefore(log.end, 1, 0)).toBe(log.end - 'prompt$ '.length);
    expect(log.lineStartBefore(log.end, 100_000, 0)).toBe(null);
  });

  test('a session that streams on while its cold segments keep going to disk: the spill file stays within the log capacity, every byte held reads back', async () => {
    const cap = 1024 * 1024;
    const log = new OutputLog(cap);
    let largest = 0;
    for (let i = 0; i < 400; i++) {
      log.append(chunk(log.end, 50_000 + (i % 7) * 1000));
      log.spillCold(64 * 1024, Infinity);
      await log.spillsLanded();
      largest = Math.max(largest, log.spillFileBytes);
    }
    // Appended, the file would hold everything ever spilled: ~20 MiB.
    expect(log.end).toBeGreaterThan(20 * cap);
    expect(largest).toBeGreaterThan(cap / 2);
    expect(largest).toBeLessThanOrEqual(cap + 2 * 256 * 1024);
    expect(log.read(log.start).equals(chunk(log.start, log.end - log.start))).toBe(true);
    expect(log.read(log.start + 1234, log.start + 345_678).equals(chunk(log.start + 1234, 345_678 - 1234))).toBe(true);
  });

  test('nothing from keepFrom on is evicted: the log grows past its capacity, spills without two held bytes sharing a place, and is a ring again once the mark moves', async () => {
    const cap = 1024 * 1024;
    const log = new OutputLog(cap);
    const mark = 300_000;
    log.keepFrom = mark;
    for (let i = 0; i < 70; i++) {
      log.append(chunk(log.end, 50_000));
      log.spillCold(64 * 1024, Infinity);
      // Every other time, the writes land before the next append: then the next spill finds them on disk.
      if (i % 2) await log.spillsLanded();
      if (log.end - mark >= cap) expect(log.keptFull).toBe(true);
    }
    expect(log.end).toBeGreaterThan(3 * cap);
    expect(log.start).toBeLessThanOrEqual(mark);
    expect(log.start).toBeGreaterThan(mark - OutputLogConstants.SegmentBytes);
    expect(log.read(mark).equals(chunk(mark, log.end - mark))).toBe(true);
    // The mark moves on: the next append lets go of everything before the newest capacity's worth.
    log.keepFrom = log.end - cap / 2;
    expect(log.keptFull).toBe(false);
    log.append(chunk(log.end, 1000));
    log.spillCold(64 * 1024, Infinity);
    await log.spillsLanded();
    expect(log.retainedBytes).toBeLessThanOrEqual(cap + OutputLogConstants.SegmentBytes);
    expect(log.read(log.start).equals(chunk(log.start, log.end - log.start))).toBe(true);
    log.keepFrom = -Infinity;
    for (let i = 0; i < 30; i++) log.append(chunk(log.end, 50_000));
    expect(log.keptFull).toBe(true);
    expect(log.read(log.start).equals(chunk(log.start, log.end - log.start))).toBe(true);
  });

  describe('reusing evicted memory', () => {
    const Seg = OutputLogConstants.SegmentBytes;
    /** Each byte says where it is, so a view overwritten by later output shows. */
    const byteAt = (offset: number): number => (offset * 7 + (offset >>> 13)) & 255;
    const bytes = (from: number, n: number): Buffer => {
      const b = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i++) b[i] = byteAt(from + i);
      return b;
    };
    const fill = (log: OutputLog, n: number): void => {
      for (let i = 0; i < n; i++) log.append(bytes(log.end, Seg));
    };
    beforeEach(() => OutputLog.dropSpareSegments());

    test('a log at capacity reuses the segments it evicts instead of allocating new ones', () => {
      const log = new OutputLog(4 * Seg);
      fill(log, 8);
      const first = log.chunkAt(log.start, Seg)!.data.buffer;
      // Going on past capacity evicts the segment holding `first` and fills new ones with its memory.
      fill(log, 8);
      const held = new Set<ArrayBufferLike>();
      for (let at = log.start; at < log.end; at += Seg) held.add(log.chunkAt(at, Seg)!.data.buffer);
      expect(held.has(first)).toBe(true);
      // Reused memory holds the new bytes, whole.
      expect(log.read(log.start).equals(bytes(log.start, log.end - log.start))).toBe(true);
    });

    test('a segment spilled to disk gives its memory to whichever log grows next; one with a view out does not', async () => {
      const a = new OutputLog(64 * Seg);
      fill(a, 8);
      const out = { from: Infinity };
      a.addViewHolder({ viewsFrom: () => out.from, viewsTo: () => Infinity });
      const spilled = a.chunkAt(0, Seg)!.data.buffer;
      expect(a.spillCold(4 * Seg, 2 * Seg)).toBe(2 * Seg);
      // Its memory is let go of once its write has landed, not before.
      expect(OutputLog.spareSegments).toBe(0);
      await a.spillsLanded();
      expect(OutputLog.spareSegments).toBe(2);
      const b = new OutputLog(64 * Seg);
      fill(b, 4);
      const inB = new Set<ArrayBufferLike>();
      for (let at = b.start; at < b.end; at += Seg) inB.add(b.chunkAt(at, Seg)!.data.buffer);
      expect(inB.has(spilled)).toBe(true);
      expect(b.read(0).equals(bytes(0, 4 * Seg))).toBe(true);
      // `a` still reads what it spilled, from disk.
      expect(a.read(0, 8 * Seg).equals(bytes(0, 8 * Seg))).toBe(true);
      // With a view of its third segment out, spilling it keeps nothing for reuse.
      OutputLog.dropSpareSegments();
      out.from = 2 * Seg;
      const view = a.chunkAt(2 * Seg, Seg)!.data;
      const copy = Buffer.from(view);
      expect(a.spillCold(4 * Seg, Seg)).toBe(Seg);
      await a.spillsLanded();
      expect(OutputLog.spareSegments).toBe(0);
      fill(b, 8);
      expect(view.equals(copy)).toBe(true);
    });

    test('a segment evicted, or skipped past, while its spill write is on its way is not reused before the write lands; every byte held reads back', async () => {
      const log = new OutputLog(8 * Seg);
      fill(log, 8);
      const first = log.chunkAt(0, Seg)!.data.buffer;
      expect(log.spillCold(2 * Seg, Infinity)).toBe(6 * Seg);
      // The flood goes on at once: the oldest segments go, the one being written among them.
      fill(log, 6);
      const held = new Set<ArrayBufferLike>();
      for (let at = log.start; at < log.end; at += Seg) held.add(log.chunkAt(at, Seg)!.data.buffer);
      expect(held.has(first)).toBe(false);
      expect(log.read(log.start).equals(bytes(log.start, log.end - log.start))).toBe(true);
      await log.spillsLanded();
      expect(log.read(log.start).equals(bytes(log.start, log.end - log.start))).toBe(true);
      // Spilled again, and the log skips past everything while that write is on its way.
      log.spillCold(2 * Seg, Infinity);
      log.skipTo(log.end + 100);
      fill(log, 8);
      log.spillCold(2 * Seg, Infinity);
      await log.spillsLanded();
      expect(log.residentBytes).toBe(2 * Seg);
      expect(log.read(log.start).equals(bytes(log.start, log.end - log.start))).toBe(true);
    });

    test('memory a reader still has a view of out is never reused', () => {
      const log = new OutputLog(4 * Seg);
      fill(log, 4);
      const out = { from: log.start };
      log.addViewHolder({ viewsFrom: () => out.from, viewsTo: () => Infinity });
      const view = log.chunkAt(log.start, Seg)!.data;
      const copy = Buffer.from(view);
      fill(log, 12);
      expect(view.equals(copy)).toBe(true);
      expect(OutputLog.spareSegments).toBe(0);
      // Once the reader says it is done, evicted memory is reused again.
      out.from = Infinity;
      fill(log, 2);
      expect(OutputLog.spareSegments).toBeGreaterThan(0);
    });

    test('a cursor whose frames the transport has not flushed keeps them intact through a flood, which reuses the memory they do not view; flushed, theirs is reused too', () => {
      const log = new OutputLog(4 * Seg);
      const sent: { payload: Buffer; copy: Buffer; flushed: () => void }[] = [];
      const cursor = new LogCursor({
        log,
        from: 0,
        wholeCharacters: false,
        maxFrameBytes: Seg,
        send: (payload, _channel, _at, flushed) => sent.push({ payload, copy: Buffer.from(payload), flushed }),
        onGap: () => true,
      });
      fill(log, 3);
      cursor.pump();
      expect(sent.length).toBe(3);
      // The flood evicts the segments those frames are views of, many times over. The segments after
      // them, which no frame views, are filled again as they fall off: a handful of buffers, not one each.
      const filledInto = new Set<ArrayBufferLike>();
      for (let i = 0; i < 20; i++) {
        fill(log, 1);
        filledInto.add(log.chunkAt(log.end - 1, 1)!.data.buffer);
      }
      for (const s of sent) expect(s.payload.equals(s.copy)).toBe(true);
      for (const s of sent) expect(filledInto.has(s.payload.buffer)).toBe(false);
      expect(filledInto.size).toBeLessThanOrEqual(6);
      // A stopped cursor still has its frames out: nothing reused until the transport flushes them.
      cursor.stop();
      fill(log, 4);
      for (const s of sent) expect(s.payload.equals(s.copy)).toBe(true);
      for (const s of sent) s.flushed();
      fill(log, 2);
      expect(OutputLog.spareSegments).toBeGreaterThan(0);
      expect(log.read(log.start).equals(bytes(log.start, log.end - log.start))).toBe(true);
    });

    test('a cursor streaming a flood with a frame always out keeps its bookkeeping small and its frames intact', () => {
      const log = new OutputLog(4 * Seg);
      let pending: { payload: Buffer; copy: Buffer; flushed: () => void } | null = null;
      let checked = 0;
      const cursor = new LogCursor({
        log,
        from: 0,
        wholeCharacters: false,
        maxFrameBytes: Seg / 4,
        send: (payload, _channel, _at, flushed) => {
          // The previous frame is flushed only once the next is out: one is always in flight.
          if (pending) {
            expect(pending.payload.equals(pending.copy)).toBe(true);
            checked++;
            pending.flushed();
          }
          pending = { payload, copy: Buffer.from(payload), flushed };
        },
        onGap: () => true,
      });
      for (let i = 0; i < 2000; i++) {
        log.append(bytes(log.end, Seg / 4));
        cursor.pump();
      }
      expect(checked).toBe(1999);
      expect(cursor.viewsFrom()).toBe(log.end - Seg / 4);
      // Flushed frames are dropped from its list as it goes (a private field, read for this check).
      expect((cursor as unknown as { outAt: number[] }).outAt.length).toBeLessThanOrEqual(257);
      expect(log.read(log.start).equals(bytes(log.start, log.end - log.start))).toBe(true);
    });
  });
});
