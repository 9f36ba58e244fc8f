/**
 * A small seeded PRNG (mulberry32) with the helpers the generators need. Every generated case draws from
 * its own fork, `rng.fork(label, index)`, so case N is the same request for the same seed no matter how
 * many values other cases consumed or in which order the concurrent workers ran: a failure reported as
 * `seed=S case=http#N` is reproduced by `HOSTILE_SEED=S` (and `HOSTILE_ONLY=http#N` to run just that case).
 */
export class Rng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }

  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An independent stream for one labelled case. */
  fork(label: string, index = 0): Rng {
    let h = (this.seed ^ 0x811c9dc5) >>> 0;
    for (const ch of `${label}#${index}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    return new Rng(h);
  }

  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)];
  }

  /** Picks by weight: [[weight, value], ...]. */
  weighted<T>(choices: readonly (readonly [number, T])[]): T {
    const total = choices.reduce((n, [w]) => n + w, 0);
    let r = this.next() * total;
    for (const [w, v] of choices) {
      if ((r -= w) < 0) return v;
    }
    return choices[choices.length - 1][1];
  }

  bytes(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) out[i] = Math.floor(this.next() * 256);
    return out;
  }

  /** Printable ASCII, no quotes issues handled by the caller. */
  ascii(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += String.fromCharCode(this.int(0x20, 0x7e));
    return s;
  }

  /** Any code points: controls, NUL, astral, lone surrogates. */
  unicode(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) {
      const kind = this.int(0, 5);
      if (kind === 0) s += String.fromCharCode(this.int(0, 0x1f));
      else if (kind === 1) s += String.fromCharCode(this.int(0xd800, 0xdfff)); // lone surrogate
      else if (kind === 2) s += String.fromCodePoint(this.int(0x10000, 0x10ffff));
      else if (kind === 3) s += String.fromCharCode(this.int(0x80, 0x7ff));
      else s += String.fromCharCode(this.int(0x20, 0x7e));
    }
    return s;
  }
}

export function seedFromEnv(): number {
  const raw = process.env.HOSTILE_SEED;
  if (raw && /^(0x[0-9a-f]+|\d+)$/i.test(raw)) return Number(raw) >>> 0;
  // A fixed default: the same run every time unless a seed is asked for.
  return 0x5eed_0d0c;
}
