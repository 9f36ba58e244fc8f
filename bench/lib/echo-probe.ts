import { nowMs } from './stats';

/**
 * Times keystroke echoes on any byte stream: `press` sends one key and resolves with the milliseconds
 * until a chunk containing that key arrived. Keys cycle through a-z, so the echo of one key is never
 * mistaken for another's.
 */
export class EchoProbe {
  private waiting: { key: number; sentAt: number; resolve: (ms: number) => void } | null = null;
  private next = 0;

  constructor(private readonly sendKey: (key: Buffer) => void) {}

  /** Feed every chunk the stream delivers. */
  feed(chunk: Buffer): void {
    const w = this.waiting;
    if (w && chunk.includes(w.key)) {
      this.waiting = null;
      w.resolve(nowMs() - w.sentAt);
    }
  }

  press(timeoutMs = 5000): Promise<number> {
    const key = 0x61 + (this.next++ % 26);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        reject(new Error(`no echo of ${String.fromCharCode(key)} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting = {
        key,
        sentAt: nowMs(),
        resolve: (ms) => {
          clearTimeout(timer);
          resolve(ms);
        },
      };
      this.sendKey(Buffer.from([key]));
    });
  }

  /** Presses `count` keys one after another, `paceMs` apart (0: the next as soon as the echo is in). */
  async run(count: number, paceMs: number): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < count; i++) {
      out.push(await this.press());
      if (paceMs > 0) await new Promise((r) => setTimeout(r, paceMs));
    }
    return out;
  }
}
