/**
 * Terminal bytes rendered as the text a person would read off the screen, line by line:
 * escape sequences removed, `\r\n` as `\n`, a bare `\r` returning to the line's start so a progress bar
 * keeps only its last state, backspace and erase-in-line applied.
 *
 * This is deliberately a line renderer, not an emulator: a command's output is a stream of lines. The
 * headless xterm in screen.ts is what renders full-screen programs.
 */
export function renderPlainText(input: string): string {
  const lines: string[] = [];
  let line: string[] = [];
  let col = 0;
  const put = (ch: string): void => {
    while (line.length < col) line.push(' ');
    line[col++] = ch;
  };
  const n = input.length;
  let i = 0;
  while (i < n) {
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
    } else if (c === 0x0d) col = 0;
    else if (c === 0x08) col = Math.max(0, col - 1);
    else if (c === 0x09) put('\t');
    else if (c < 0x20 || c === 0x7f || (c >= 0x80 && c < 0xa0)) continue;
    else if (c >= 0xd800 && c <= 0xdbff && i < n) {
      put(input[i - 1] + input[i]);
      i++;
    } else put(input[i - 1]);
  }
  if (line.length) lines.push(line.join(''));
  return lines.join('\n').replace(/\n+$/, '');
}

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
