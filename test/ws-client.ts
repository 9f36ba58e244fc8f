import WebSocket from 'ws';

/** A test client that records every frame in order and lets a test wait for the one it expects. */
export interface Frame {
  text?: any;
  raw?: string;
  binary?: Buffer;
}

export class WsClient {
  readonly frames: Frame[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: (() => void)[] = [];
  private readIndex = 0;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
      if (isBinary) this.frames.push({ binary: buf });
      else {
        const raw = buf.toString('utf8');
        let text: unknown = raw;
        try {
          text = JSON.parse(raw);
        } catch {
          // plain text
        }
        this.frames.push({ text, raw });
      }
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
    ws.on('error', () => this.wake());
  }

  /** Opens a socket; rejects with the HTTP status and body when the server refuses the upgrade. */
  static open(url: string, headers: Record<string, string> = {}): Promise<WsClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      const client = new WsClient(ws);
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body: body ? JSON.parse(body) : null })));
      });
      ws.once('error', (err) => reject(err));
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f());
  }

  /** The next frame (after the last one returned) that satisfies `pred`. */
  async next(pred: (f: Frame) => boolean = () => true, timeoutMs = 10000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (; this.readIndex < this.frames.length; this.readIndex++) {
        const f = this.frames[this.readIndex];
        if (pred(f)) {
          this.readIndex++;
          return f;
        }
      }
      if (this.closed) throw new Error(`socket closed (${this.closed.code} ${this.closed.reason}) before the expected frame; got ${JSON.stringify(this.frames.slice(-5))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for a frame; last frames: ${JSON.stringify(this.frames.slice(-5).map((f) => f.raw ?? f.binary?.toString('latin1')))}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** Later calls to next() look only at frames that arrive from now on. */
  skipReceived(): void {
    this.readIndex = this.frames.length;
  }

  nextJson(type: string, timeoutMs?: number): Promise<any> {
    return this.next((f) => f.text && typeof f.text === 'object' && f.text.type === type, timeoutMs).then((f) => f.text);
  }

  /** Concatenated text of JSON output frames (and binary frames) received so far. */
  outputText(types = ['output']): string {
    return this.frames
      .map((f) => (f.binary ? f.binary.toString('utf8') : f.text && typeof f.text === 'object' && types.includes(f.text.type) ? f.text.data : ''))
      .join('');
  }

  async waitForOutput(pattern: RegExp | string, timeoutMs = 10000, types?: string[]): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const out = this.outputText(types);
      if (typeof pattern === 'string' ? out.includes(pattern) : pattern.test(out)) return out;
      if (this.closed || Date.now() > deadline) throw new Error(`output never matched ${pattern}: ${JSON.stringify(out.slice(-400))}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  sendJson(v: unknown): void {
    this.ws.send(JSON.stringify(v));
  }

  async waitClose(timeoutMs = 10000): Promise<{ code: number; reason: string }> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error('socket did not close');
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.closed;
  }

  close(): void {
    this.ws.close();
  }
}
