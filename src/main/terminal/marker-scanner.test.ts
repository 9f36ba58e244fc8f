import { expect, test } from 'vitest';
import { MarkerScanner, type Marker } from './marker-scanner';

const nonce = 'abc123';

function scan(chunks: string[]): { markers: Marker[]; queries: number } {
  const markers: Marker[] = [];
  let queries = 0;
  const s = new MarkerScanner(nonce, (m) => markers.push(m), () => queries++);
  let offset = 0;
  for (const c of chunks) {
    const b = Buffer.from(c, 'latin1');
    s.feed(b, offset);
    offset += b.length;
  }
  return { markers, queries };
}

test('finds markers with absolute offsets, also when split across chunks', () => {
  const text = `hi\x1b]633;C;${nonce}\x07out\x1b]633;D;42;${nonce}\x07$ `;
  const whole = scan([text]).markers;
  const c = `\x1b]633;C;${nonce}\x07`;
  const d = `\x1b]633;D;42;${nonce}\x07`;
  const dAt = text.indexOf(d);
  expect(whole.map((m) => [m.kind, m.exitCode, m.start, m.end])).toEqual([
    ['C', null, 2, 2 + c.length],
    ['D', 42, dAt, dAt + d.length],
  ]);
  for (let cut = 1; cut < text.length; cut++) {
    expect(scan([text.slice(0, cut), text.slice(cut)]).markers).toEqual(whole);
  }
});

test('ignores markers without our nonce', () => {
  expect(scan(['\x1b]633;D;0;forged\x07', '\x1b]633;C\x07']).markers).toEqual([]);
});

test('notices terminal queries (cursor position, device attributes), not ordinary CSI', () => {
  expect(scan(['\x1b[6n']).queries).toBe(1);
  expect(scan(['\x1b[', 'c']).queries).toBe(1);
  expect(scan(['\x1b[31mred\x1b[0m\x1b[2J']).queries).toBe(0);
});
