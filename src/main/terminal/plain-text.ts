/**
 * Terminal bytes rendered as the text a person would read off the screen, line by line:
 * escape sequences removed, `\r\n` as `\n`, a bare `\r` returning to the line's start so a progress bar
 * keeps only its last state, backspace and erase-in-line applied.
 *
 * This is deliberately a line renderer, not an emulator: a command's output is a stream of lines. The
 * headless xterm in screen.ts is what renders full-screen programs.
 */
export function renderPlainText(input: string): string {
  return render(input, true);
}

/** The same, one character at a time throughout: the reference the whole-line path is tested against. */
export function renderPlainTextByCharacter(input: string): string {
  return render(input, false);
}

function render(input: string, wholeLines: boolean): string {
  const lines: string[] = [];
  let line: string[] = [];
  let col = 0;
  const put = (ch: string): void => {
    while (line.length < col) line.push(' ');
    line[col++] = ch;
  };
  const n = input.length;
  let i = 0;
  let atLineStart = wholeLines;
  while (i < n) {
    if (atLineStart) {
      atLineStart = false;
      // Whole lines of plain text (colours aside) render as themselves: taken with a few native searches
      // instead of character by character. Every command that ends renders its output on the thread that
      // serves every session, and a flood of short lines cost it tens of milliseconds.
      NotPlain.lastIndex = i;
      const stop = NotPlain.exec(input)?.index ?? n;
      const lastNewline = input.lastIndexOf('\n', stop - 1);
      if (lastNewline >= i) {
        // Its carriage returns all end a line (NotPlain), the last one right before lastNewline.
        const block = input.slice(i, lastNewline).replace(Colour, '').split('\r\n').join('\n');
        lines.push(block.endsWith('\r') ? block.slice(0, -1) : block);
        i = lastNewline + 1;
        continue;
      }
    }
    const c = input.charCodeAt(i);
    if (c === 0x1b) {
      i = skipEscape(input, i, (final, params) => {
        const p = Number.parseInt(params, 10);
        const count = Number.isFinite(p) && p > 0 ? p : 1;
        if (final === 'K') {
          if (params === '' || params === '0') line.length = Math.min(line.length, col);
          else if (params === '1') for (let k = 0; k < Math.min(col, line.length); k++) line[k] = ' ';
          else if (params === '2') line = [];
        } else if (final === 'C') col += count;
        else if (final === 'D') col = Math.max(0, col - count);
        else if (final === 'G') col = count - 1;
      });
      continue;
    }
    if (c === 0x9b) {
      // C1 CSI as a single code point: skip its parameters and final byte.
      i++;
      while (i < n && input.charCodeAt(i) >= 0x20 && input.charCodeAt(i) <= 0x3f) i++;
      i++;
      continue;
    }
    i++;
    if (c === 0x0a) {
      lines.push(line.join(''));
      line = [];
      col = 0;
      atLineStart = wholeLines;
    } else if (c === 0x0d) col = 0;
    else if (c === 0x08) col = Math.max(0, col - 1);
    else if (c === 0x09) put('\t');
    else if (c < 0x20 || c === 0x7f || (c >= 0x80 && c < 0xa0)) continue;
    else if (c >= 0xd800 && c <= 0xdbff && i < n && (input.charCodeAt(i) & 0xfc00) === 0xdc00) {
      // A surrogate pair is one character; a lone half is kept as it is, without swallowing what follows.
      put(input[i - 1] + input[i]);
      i++;
    } else put(input[i - 1]);
  }
  if (line.length) lines.push(line.join(''));
  return lines.join('\n').replace(/\n+$/, '');
}

/**
 * A character that plain text does not render as itself: any control character but a newline, an
 * escape that does not start a colour, and a carriage return anywhere but right before a newline (a
 * bare one returns to the line's start).
 */
const NotPlain = /\x1b(?!\[[0-9;:]*m)|[\x00-\x09\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f]|\r(?!\n)/g;
/** A colour (SGR) sequence: it changes how text looks, not what it is. */
const Colour = /\x1b\[[0-9;:]*m/g;

/**
 * Skips the escape sequence starting at `i` (an ESC) and returns the index after it. CSI sequences
 * are reported to `onCsi` with their final byte and parameter string; OSC, DCS, SOS, PM and APC strings
 * run to BEL or ST. An unterminated sequence swallows the rest, as a terminal would wait for more.
 */
export function skipEscape(s: string, i: number, onCsi?: (final: string, params: string) => void): number {
  const n = s.length;
  const next = s[i + 1];
  if (next === undefined) return n;
  if (next === '[') {
    let j = i + 2;
    while (j < n && s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x3f) j++;
    const params = s.slice(i + 2, j);
    while (j < n && s.charCodeAt(j) >= 0x20 && s.charCodeAt(j) <= 0x2f) j++;
    if (j >= n) return n;
    onCsi?.(s[j], params);
    return j + 1;
  }
  if (next === ']' || next === 'P' || next === 'X' || next === '^' || next === '_') {
    for (let j = i + 2; j < n; j++) {
      if (s.charCodeAt(j) === 0x07) return j + 1;
      if (s.charCodeAt(j) === 0x1b && s[j + 1] === '\\') return j + 2;
    }
    return n;
  }
  // Charset designation (ESC ( B and friends) takes one more byte; everything else is ESC + one byte.
  if ('()*+-./#%'.includes(next)) return Math.min(n, i + 3);
  return i + 2;
}
