import { Worker } from 'node:worker_threads';

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
  /** Bytes of output handled (written, or dropped after a failure): the main thread's queue shrinks by this. */
  | { op: 'done'; id: number; bytes: number; fileBytes: number }
  | { op: 'failed'; id: number; error: string }
  | { op: 'ticket'; ticket: number };

function workerMain(): void {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { parentPort } = require('node:worker_threads') as typeof import('node:worker_threads');
  const fs = require('node:fs') as typeof import('node:fs');
  const { StringDecoder } = require('node:string_decoder') as typeof import('node:string_decoder');
  interface Rec {
    fd: number | null;
    decoder: InstanceType<typeof StringDecoder>;
    written: number;
  }
  const recs = new Map<number, Rec>();
  const port = parentPort!;
  const write = (id: number, rec: Rec, line: string): void => {
    if (rec.fd === null) return;
    try {
      const buf = Buffer.from(line + '\n', 'utf8');
      let off = 0;
      while (off < buf.length) off += fs.writeSync(rec.fd, buf, off);
      rec.written += buf.length;
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
        rec = { fd: null, decoder: new StringDecoder('utf8'), written: 0 };
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
        if (!rec) return;
        const text = rec.decoder.write(Buffer.from(m.bytes, 0, m.length));
        if (text) write(m.id, rec, JSON.stringify([m.t, 'o', text]));
        port.postMessage({ op: 'done', id: m.id, bytes: m.length, fileBytes: rec.written });
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
          const tail = rec.decoder.end();
          if (tail) write(m.id, rec, JSON.stringify([m.t, 'o', tail]));
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
    const w = new Worker(`(${workerMain.toString()})()`, { eval: true });
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
