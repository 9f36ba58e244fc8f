/**
 * UTF-8 boundary helpers. PTY output is bytes; JSON doors and text renderings need whole characters,
 * so a cut that lands inside a multi-byte sequence moves to the nearest boundary instead.
 */

const isContinuation = (b: number): boolean => (b & 0xc0) === 0x80;

/** Length of the sequence a lead byte announces (1 for ASCII and for stray bytes, which decode as U+FFFD anyway). */
function sequenceLength(lead: number): number {
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  if (lead >= 0xe0) return lead <= 0xef ? 3 : 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  return 1;
}

/** How many bytes at the end of `buf` start a character that is not complete yet (0..3). */
export function incompleteTailLength(buf: Uint8Array): number {
  const n = buf.length;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const b = buf[n - back];
    if (isContinuation(b)) continue;
    const need = sequenceLength(b);
    return need > back ? back : 0;
  }
  return 0;
}

/** How many continuation bytes open `buf` (the tail of a character cut off in front), at most 3. */
export function leadingContinuationLength(buf: Uint8Array): number {
  let i = 0;
  while (i < Math.min(3, buf.length) && isContinuation(buf[i])) i++;
  return i;
}

/** `text` cut to at most `maxBytes` of UTF-8 from the front, never inside a character. */
export function utf8Head(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  const cut = buf.subarray(0, maxBytes);
  return cut.subarray(0, cut.length - incompleteTailLength(cut)).toString('utf8');
}

/** `text` cut to at most `maxBytes` of UTF-8 from the back, never inside a character. */
export function utf8Tail(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  const cut = buf.subarray(buf.length - maxBytes);
  return cut.subarray(leadingContinuationLength(cut)).toString('utf8');
}
