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

function titles(chunks: string[]): string[] {
  const out: string[] = [];
  const s = new MarkerScanner(nonce, () => undefined, () => undefined, (t) => out.push(t));
  let offset = 0;
  for (const c of chunks) {
    const b = Buffer.from(c, 'utf8');
    s.feed(b, offset);
    offset += b.length;
  }
  return out;
}

test('finds window titles (OSC 0 and 2, ended by BEL or ESC \\), also when split across chunks', () => {
  const text = `x\x1b]0;build: ünïcode\x07y\x1b]2;second\x1b\\z\x1b]633;D;0;${nonce}\x07`;
  expect(titles([text])).toEqual(['build: ünïcode', 'second']);
  const bytes = Buffer.from(text, 'utf8');
  for (let cut = 1; cut < bytes.length; cut++) {
    const out: string[] = [];
    const s = new MarkerScanner(nonce, () => undefined, () => undefined, (t) => out.push(t));
    s.feed(bytes.subarray(0, cut), 0);
    s.feed(bytes.subarray(cut), cut);
    expect(out, `cut at ${cut}`).toEqual(['build: ünïcode', 'second']);
  }
});

test('ignores other OSCs, icon-only titles (OSC 1) and titles too long to show', () => {
  expect(titles(['\x1b]1;icon\x07\x1b]8;;http://x\x07link\x1b]8;;\x07\x1b]11;?\x07'])).toEqual([]);
  expect(titles([`\x1b]0;${'a'.repeat(5000)}\x07\x1b]0;short\x07`])).toEqual(['short']);
});

test('a title cut short by another escape sequence ends there, and that sequence is still seen', () => {
  const markers: Marker[] = [];
  const out: string[] = [];
  const s = new MarkerScanner(nonce, (m) => markers.push(m), () => undefined, (t) => out.push(t));
  s.feed(Buffer.from(`\x1b]0;half\x1b]633;B;${nonce}\x07`), 0);
  expect(out).toEqual(['half']);
  expect(markers.map((m) => m.kind)).toEqual(['B']);
});

test('a sequence cut short by the next ESC (a program killed mid-sequence) does not swallow the marker after it', () => {
  const d = `\x1b]633;D;124;${nonce}\x07`;
  const text = `\x1b[6n\r\n\x1b[6${d}$ `;
  const whole = scan([text]);
  expect(whole.markers.map((m) => [m.kind, m.exitCode, m.start])).toEqual([['D', 124, text.indexOf(d)]]);
  // Split anywhere, the same.
  for (let cut = 1; cut < text.length; cut++) expect(scan([text.slice(0, cut), text.slice(cut)]).markers).toEqual(whole.markers);
  // A control byte that cuts one short begins what follows too: the query after it still counts.
  expect(scan(['\x1b[3\r\x1b[6n']).queries).toBe(1);
  expect(scan(['\x1b[12\x1b[6n']).queries).toBe(1);
});

test('a marker-like sequence cut short (a file of old output, its end cut off) does not swallow the marker after it', () => {
  const d = `\x1b]633;D;3;${nonce}\x07`;
  const text = `tail of a log \x1b]633;D;0;ff${d}$ `;
  const whole = scan([text]);
  expect(whole.markers.map((m) => [m.kind, m.exitCode, m.start])).toEqual([['D', 3, text.indexOf(d)]]);
  for (let cut = 1; cut < text.length; cut++) expect(scan([text.slice(0, cut), text.slice(cut)]).markers).toEqual(whole.markers);
});
