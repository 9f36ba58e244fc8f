import { Worker } from 'node:worker_threads';
import { Utf8JsonEscaper } from './json-text';

/**
 * Staging buffers the thread handed back, kept for any recording to fill again: shared, so that what
 * is kept does not grow with the number of sessions (4 per recording held 60 MiB after 50 sessions had
 * each printed a burst once); while the thread lags, more are allocated and left to the collector.
 */
const SpareBuffers = 16;

/**
 * The thread that turns recorded bytes into asciicast lines and writes them, so that decoding UTF-8,
 * JSON-escaping and writing never run on the server's main thread (measured: on the main thread they
 * doubled the server's CPU per MiB of output and cut throughput to ~0.7×). One thread serves every
 * recording; messages for one recording arrive in the order they were posted.
 *
 * The thread's code is the self-contained function below, started with `eval` so it needs no separate
 * file in the bundle (it runs the same under vitest, the CLI and Electron).
 */
export type ToWorker =
  | { op: 'open'; id: number; path: string; header: string }
  | { op: 'output'; id: number; t: number; bytes: ArrayBuffer; length: number }
  | { op: 'event'; id: number; t: number; code: 'i' | 'r' | 'm'; data: string }
  | { op: 'flush'; id: number; ticket: number }
  | { op: 'close'; id: number; t: number; ticket: number };

export type FromWorker =
  /**
   * Bytes of output handled (written, or dropped after a failure): the main thread's queue shrinks by
   * this, and the buffer comes back to be filled again (no garbage left for either thread to collect).
   */
  | { op: 'done'; id: number; bytes: number; fileBytes: number; buffer: ArrayBuffer }
  | { op: 'failed'; id: number; error: string }
  | { op: 'ticket'; ticket: number };

function workerMain(Escaper: typeof Utf8JsonEscaper): void {
  const { parentPort } = require('node:worker_threads') as typeof import('node:worker_threads');
  const fs = require('node:fs') as typeof import('node:fs');
  interface Rec {
    fd: number | null;
    escaper: Utf8JsonEscaper;
    written: number;
  }
  const recs = new Map<number, Rec>();
  const port = parentPort!;
  const LINE_END = Buffer.from('"]\n');
  /** A line as text, or as parts written with one writev (the escaped output is not copied again). */
  const write = (id: number, rec: Rec, line: string | Uint8Array[]): void => {
    if (rec.fd === null) return;
    try {
      let parts = typeof line === 'string' ? [Buffer.from(line + '\n', 'utf8')] : line;
      let total = parts.reduce((n, p) => n + p.length, 0);
      rec.written += total;
      // A short write (rare: a nearly full disk, a signal) goes on from where it stopped.
      for (;;) {
        const done = fs.writevSync(rec.fd, parts);
        if (done >= total) break;
        const rest = Buffer.concat(parts).subarray(done);
        parts = [rest];
        total = rest.length;
      }
    } catch (err) {
      try {
        fs.closeSync(rec.fd);
      } catch {
        // already closed
      }
      rec.fd = null;
      port.postMessage({ op: 'failed', id, error: (err as Error).message });
    }
  };
  port.on('message', (m: ToWorker) => {
    let rec = recs.get(m.id);
    switch (m.op) {
      case 'open': {
        rec = { fd: null, escaper: new Escaper(), written: 0 };
        recs.set(m.id, rec);
        try {
          rec.fd = fs.openSync(m.path, 'a', 0o600);
        } catch (err) {
          port.postMessage({ op: 'failed', id: m.id, error: (err as Error).message });
          return;
        }
        write(m.id, rec, m.header);
        return;
      }
      case 'output': {
        if (!rec) {
          port.postMessage({ op: 'done', id: m.id, bytes: m.length, fileBytes: 0, buffer: m.bytes }, [m.bytes]);
          return;
        }
        const body = rec.escaper.write(new Uint8Array(m.bytes, 0, m.length));
        if (body.length) write(m.id, rec, [Buffer.from(`[${m.t},"o","`), body, LINE_END]);
        port.postMessage({ op: 'done', id: m.id, bytes: m.length, fileBytes: rec.written, buffer: m.bytes }, [m.bytes]);
        return;
      }
      case 'event':
        if (rec) write(m.id, rec, JSON.stringify([m.t, m.code, m.data]));
        return;
      case 'flush':
        port.postMessage({ op: 'ticket', ticket: m.ticket });
        return;
      case 'close': {
        if (rec) {
          const tail = rec.escaper.end();
          if (tail.length) write(m.id, rec, [Buffer.from(`[${m.t},"o","`), tail, LINE_END]);
          if (rec.fd !== null) {
            try {
              fs.closeSync(rec.fd);
            } catch {
              // already closed
            }
          }
          recs.delete(m.id);
        }
        port.postMessage({ op: 'ticket', ticket: m.ticket });
        return;
      }
    }
  });
}

/** The one recording thread, started on first use; it does not keep the process alive. */
export class CastThread {
  private worker: Worker | null = null;
  private readonly tickets = new Map<number, () => void>();
  private nextTicket = 0;
  private readonly listeners = new Map<number, (m: FromWorker) => void>();
  private readonly spare: ArrayBuffer[] = [];

  /** A staging buffer handed back earlier, if one is kept. */
  spareBuffer(): ArrayBuffer | undefined {
    return this.spare.pop();
  }

  giveBack(buffer: ArrayBuffer): void {
    if (this.spare.length < SpareBuffers) this.spare.push(buffer);
  }

  post(m: ToWorker, transfer?: ArrayBuffer[]): void {
    this.thread().postMessage(m, transfer);
  }

  /** Resolves once the thread has handled everything posted before. */
  ticket(make: (ticket: number) => ToWorker): Promise<void> {
    const ticket = ++this.nextTicket;
    return new Promise((resolve) => {
      this.tickets.set(ticket, resolve);
      this.post(make(ticket));
    });
  }

  listen(id: number, l: (m: FromWorker) => void): () => void {
    this.listeners.set(id, l);
    return () => this.listeners.delete(id);
  }

  async stop(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
    for (const resolve of this.tickets.values()) resolve();
    this.tickets.clear();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // Compilers that keep function names (esbuild's keepNames, as tsx uses) wrap functions in a
    // `__name` helper the thread would not have: a stand-in that does nothing keeps the source whole.
    const source = `var __name = (target) => target;\n(${workerMain.toString()})(${Utf8JsonEscaper.toString()})`;
    const w = new Worker(source, { eval: true });
    w.unref();
    w.on('message', (m: FromWorker) => {
      if (m.op === 'ticket') {
        this.tickets.get(m.ticket)?.();
        this.tickets.delete(m.ticket);
      } else this.listeners.get(m.id)?.(m);
    });
    w.on('error', (err) => {
      // The thread died (a bug, not a disk): every recording stops, the sessions go on.
      for (const l of this.listeners.values()) l({ op: 'failed', id: -1, error: `the recording thread failed: ${err.message}` });
      for (const resolve of this.tickets.values()) resolve();
      this.tickets.clear();
      this.worker = null;
    });
    this.worker = w;
    return w;
  }
}
