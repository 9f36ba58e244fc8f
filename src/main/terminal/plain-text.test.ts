import { expect, test } from 'vitest';
import { renderPlainText, renderPlainTextByCharacter } from './plain-text';

test('CRLF becomes LF and the trailing newline goes', () => {
  expect(renderPlainText('Name: Alice\r\nHello Alice\r\n')).toBe('Name: Alice\nHello Alice');
});

test('escape sequences vanish: colors, OSC titles and markers, charset switches', () => {
  expect(renderPlainText('\x1b[1;31mred\x1b[0m \x1b]0;title\x07\x1b]633;D;0;abc\x07plain\x1b(B!')).toBe('red plain!');
});

test('a carriage-return progress bar keeps its last state', () => {
  expect(renderPlainText('progress 10%\rprogress 50%\rprogress 100%\r\ndone')).toBe('progress 100%\ndone');
});

test('backspace and erase-in-line apply', () => {
  expect(renderPlainText('abc\b\bX\r\n12345\r\x1b[Kxy')).toBe('aXc\nxy');
});

test('trailing spaces of a prompt are kept', () => {
  expect(renderPlainText('Name: ')).toBe('Name: ');
});

test('a flood of short lines, plain or coloured, renders as the lines themselves', () => {
  expect(renderPlainText('y\r\n'.repeat(4) + 'y')).toBe('y\ny\ny\ny\ny');
  expect(renderPlainText('\x1b[32mok\x1b[0m a\r\n\x1b[1;31mfail\x1b[m b\r\n\r\n')).toBe('ok a\nfail b');
});

test('plain lines around ones that need the character renderer', () => {
  // A title (OSC) that spans a newline, a bare carriage return, an erase, then plain lines again.
  expect(renderPlainText('a\r\nb\x1b]0;x\ny\x07c\r\n50%\r99%\r\nd\x1b[2K\r\ne\r\nf\r')).toBe('a\nbc\n99%\n\ne\nf');
});

test('whole lines render exactly as character by character would, whatever the mix (seeded random inputs)', () => {
  const pieces = [
    'plain', 'y', ' ', '\r\n', '\n', '\r', '\b', '\t', '\x1b[K', '\x1b[1K', '\x1b[2K', '\x1b[3C', '\x1b[2D', '\x1b[5G',
    '\x1b[32m', '\x1b[0m', '\x1b[1;31m', '\x1b[38:5:1m', '\x1b]0;title\x07', '\x1b]0;two\nlines\x1b\\', '\x1b(B', '\x1b',
    '\x9b1m', '\x85', '\x7f', '\x00', 'é', '😀', '\ud83d', '漢字', '\x1b[?25l',
  ];
  let seed = 0x2545f491;
  const random = (n: number): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  for (let k = 0; k < 3000; k++) {
    let input = '';
    for (let m = random(40); m > 0; m--) input += pieces[random(pieces.length)];
    expect(renderPlainText(input), JSON.stringify(input)).toBe(renderPlainTextByCharacter(input));
  }
});
