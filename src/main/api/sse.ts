import type { FastifyReply } from 'fastify';

/**
 * A Server-Sent Events answer, as AIO's 1.x server writes them: `: connected` first, then `data:` lines
 * of JSON, one event each. Nothing is queued here: a caller that finds the stream `congested` stops
 * and resumes on `drain`, reading its source (the session log) from where it stopped.
 */
export const SseConstants = {
  /** A quiet stream sends a keepalive this often, so that proxies and client idle timers keep it open. */
  KeepaliveMs: 15_000,
  /** Bytes handed to the socket and not yet flushed above which a writer should wait for `drain`. */
  HighWatermarkBytes: 1024 * 1024,
} as const;

export const wantsEventStream = (accept: string | undefined): boolean => (accept ?? '').toLowerCase().includes('text/event-stream');

export class SseStream {
  private open = true;
  private wroteSinceTick = false;
  private readonly timer: NodeJS.Timeout;
  private readonly closeWaiters: (() => void)[] = [];

  /** Takes the reply over and starts the stream; `keepalive` is what a quiet tick sends. */
  constructor(
    private readonly reply: FastifyReply,
    keepalive: { comment: string } | { data: unknown },
  ) {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
    });
    res.on('close', () => {
      this.open = false;
      clearInterval(this.timer);
      this.closeWaiters.splice(0).forEach((w) => w());
    });
    this.write(': connected\n\n');
    this.timer = setInterval(() => {
      if (!this.wroteSinceTick) {
        if ('comment' in keepalive) this.write(`: ${keepalive.comment}\n\n`);
        else this.data(keepalive.data);
      }
      this.wroteSinceTick = false;
    }, SseConstants.KeepaliveMs);
    this.timer.unref();
  }

  get isOpen(): boolean {
    return this.open;
  }

  get congested(): boolean {
    return this.reply.raw.writableLength > SseConstants.HighWatermarkBytes;
  }

  /** Resolves when the client goes away (or the stream is ended). */
  get closed(): Promise<void> {
    return this.open ? new Promise((r) => this.closeWaiters.push(r)) : Promise.resolve();
  }

  onDrain(fn: () => void): void {
    this.reply.raw.on('drain', fn);
  }

  data(payload: unknown): void {
    this.write(`data: ${JSON.stringify(payload)}\n\n`);
  }

  end(): void {
    clearInterval(this.timer);
    if (this.open) this.reply.raw.end();
  }

  private write(text: string): void {
    if (!this.open) return;
    this.wroteSinceTick = true;
    this.reply.raw.write(text);
  }
}
