import { randomBytes } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

/**
 * The text the throughput cases print: a file prepared once per run and printed with `cat`, so the
 * producer costs the same in every round and for every door, and the baseline prints the very same bytes.
 *
 * It is mixed terminal output, not one repeated byte: lines of varied length made of words, numbers,
 * paths, punctuation, multi-byte UTF-8 (accents, CJK, emoji) and now and then an SGR colour sequence,
 * the way a build log or `ls --color` looks. It is valid UTF-8 throughout, so the JSON door (which sends
 * strings) can carry it exactly; it has no tabs or other control bytes besides ESC (a PTY would rewrite
 * nothing else, but there is no reason to depend on that); and no terminal queries.
 *
 * Expected bytes. A PTY's line discipline turns each `\n` into `\r\n` (ONLCR) and changes nothing else
 * in this text. Rather than make the text ONLCR-invariant (that means no newline at all, hence one
 * endless line, which is not what terminals carry), the expected length and CRC are computed from the
 * text with `\n` replaced by `\r\n`, while the file is written. The baseline (node-pty read directly)
 * checks that assumption every round: if the kernel delivered anything else, the baseline fails too.
 *
 * The checked region is everything strictly between the BEGIN and END marker strings. They are unique
 * per run (a nonce) and absent from the typed command line, so the echo of `cat <file>`, the prompt,
 * the screen paint a door sends on attach and the shell's own markers are all outside it.
 */
export interface Payload {
  path: string;
  begin: Buffer;
  end: Buffer;
  /** Bytes of the file (what `cat` writes). */
  fileBytes: number;
  /** Bytes and CRC-32 of the checked region as a PTY delivers it (after ONLCR). */
  expectedBytes: number;
  expectedCrc: number;
}

const WORDS = (
  'the quick brown fox jumps over lazy dog error warning info debug compiling linking module ' +
  'package test passed failed skipped build src main index terminal session socket buffer offset ' +
  'résumé naïve café Ünïcödé 日本語 漢字 テスト 中文 한국어 emoji 🚀 ✅ ⚠️ λ→∞ ±√π'
).split(' ');
const PUNCT = ['.', ',', ':', ';', '!', '?', '-', '/', '(', ')', '[', ']', '{', '}', '=', '+', '*', '"', "'", '#', '%', '&', '|', '<', '>'];
const COLORS = ['\x1b[31m', '\x1b[32m', '\x1b[33m', '\x1b[1;34m', '\x1b[2m', '\x1b[38;5;208m', '\x1b[48;5;236m'];

/** A small fast deterministic PRNG (mulberry32): the text is the same for a given seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeLinePool(rand: () => number, count: number): string[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const pool: string[] = [];
  for (let i = 0; i < count; i++) {
    const kind = rand();
    let line = '';
    if (kind < 0.05) line = '';
    else if (kind < 0.15) line = `/usr/src/${pick(WORDS)}/${pick(WORDS)}_${Math.floor(rand() * 1e6)}.ts:${Math.floor(rand() * 900)}:${Math.floor(rand() * 120)}`;
    else if (kind < 0.25) line = `${(rand() * 1e5).toFixed(3)} ${Math.floor(rand() * 2 ** 32).toString(16)} ${Math.floor(rand() * 1e9)}`;
    else {
      const n = 1 + Math.floor(rand() * 24);
      const parts: string[] = [];
      for (let w = 0; w < n; w++) parts.push(rand() < 0.15 ? pick(WORDS) + pick(PUNCT) : pick(WORDS));
      line = parts.join(' ');
    }
    if (rand() < 0.12) line = `${pick(COLORS)}${line}\x1b[0m`;
    pool.push(line);
  }
  return pool;
}

/** Writes a payload of about `bytes` bytes (file size) into `dir`. */
export function writePayload(dir: string, bytes: number, seed = 1): Payload {
  const rand = prng(seed);
  const pool = makeLinePool(rand, 4096);
  const nonce = randomBytes(6).toString('hex');
  const begin = Buffer.from(`@@PTYDECK-BENCH-BEGIN-${nonce}@@`);
  const end = Buffer.from(`@@PTYDECK-BENCH-END-${nonce}@@`);
  const path = join(dir, `payload-${bytes}-${nonce}.txt`);
  const fd = openSync(path, 'w');
  let fileBytes = 0;
  let expectedBytes = 0;
  let expectedCrc = 0;
  try {
    writeSync(fd, begin);
    fileBytes += begin.length;
    // The checked region starts right after BEGIN, with the newline that ends its line.
    const write = (text: string): void => {
      const raw = Buffer.from(text, 'utf8');
      writeSync(fd, raw);
      fileBytes += raw.length;
      const onPty = Buffer.from(text.replaceAll('\n', '\r\n'), 'utf8');
      expectedBytes += onPty.length;
      expectedCrc = crc32(onPty, expectedCrc);
    };
    write('\n');
    let lineNo = 0;
    const target = bytes - end.length - 1;
    while (fileBytes < target) {
      const parts: string[] = [];
      let size = 0;
      // ~1 MiB per write; the line number makes every line distinct, as in a real log.
      while (size < 1024 * 1024 && fileBytes + size < target) {
        const line = `${++lineNo} ${pool[Math.floor(rand() * pool.length)]}\n`;
        parts.push(line);
        size += Buffer.byteLength(line);
      }
      write(parts.join(''));
    }
    const tail = Buffer.concat([end, Buffer.from('\n')]);
    writeSync(fd, tail);
    fileBytes += tail.length;
  } finally {
    closeSync(fd);
  }
  return { path, begin, end, fileBytes, expectedBytes, expectedCrc };
}
