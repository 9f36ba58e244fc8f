import { expect, test } from 'vitest';
import { renderPlainText } from './plain-text';

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
