import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { Utf8JsonEscaper } from './json-text';

const escapeAll = (chunks: Uint8Array[]): string => {
  const e = new Utf8JsonEscaper();
  // Each result is a view the next write reuses: copy it out first.
  return Buffer.concat([...chunks.map((c) => Buffer.from(e.write(c))), Buffer.from(e.end())]).toString('utf8');
};

test('valid UTF-8 comes out exactly as JSON.stringify writes it, however the chunks cut it', () => {
  const text = 'plain "quoted" back\\slash \x1b[31mred\x1b[0m\r\n\t\b\f\x00\x07\x7f é☃漢🎉 \u2028 end';
  const bytes = Buffer.from(text);
  const expected = JSON.stringify(text).slice(1, -1);
  expect(escapeAll([bytes])).toBe(expected);
  for (let cut = 1; cut <= 5; cut++) {
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += cut) chunks.push(bytes.subarray(i, i + cut));
    expect(escapeAll(chunks)).toBe(expected);
  }
});

test('every ASCII byte and characters of each UTF-8 length, in one chunk and with a character left over, as JSON.stringify writes them', () => {
  const text = String.fromCharCode(...Array.from({ length: 128 }, (_, i) => i)) + '\u0080ÿ\u07ff\u0800\uffff\u{10000}\u{10ffff}\u2029';
  const bytes = Buffer.from(text);
  expect(escapeAll([bytes])).toBe(JSON.stringify(text).slice(1, -1));
  // A chunk that ends inside a character, then whole ones: the carry, and the chunks after it.
  const cut = bytes.length - 2;
  expect(escapeAll([bytes.subarray(0, cut), bytes.subarray(cut), bytes])).toBe(JSON.stringify(text + text).slice(1, -1));
});

test('bytes that are not UTF-8 become U+FFFD and the result is always valid JSON text', () => {
  const cases: [number[], string][] = [
    [[0xff], '\uFFFD'],
    [[0xc0, 0xaf], '\uFFFD\uFFFD'],
    [[0xed, 0xa0, 0x80], '\uFFFD\uFFFD\uFFFD'],
    [[0xe2, 0x82, 0x41], '\uFFFDA'],
    [[0xf0, 0x9f, 0x8e], '\uFFFD'],
    [[0x61, 0xe2], 'a\uFFFD'],
  ];
  for (const [bytes, expected] of cases) expect(JSON.parse(`"${escapeAll([Uint8Array.from(bytes)])}"`)).toBe(expected);
  for (let round = 0; round < 200; round++) {
    const noise = randomBytes(1 + (round % 97));
    const out = escapeAll([noise.subarray(0, 40), noise.subarray(40)]);
    const parsed = JSON.parse(`"${out}"`) as string;
    // What TextDecoder makes of the same bytes, character for character.
    expect(parsed).toBe(new TextDecoder().decode(noise));
  }
});
