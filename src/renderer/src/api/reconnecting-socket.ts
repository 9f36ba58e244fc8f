/**
 * A WebSocket that comes back by itself. Both viewer sockets use it: the session list and each open
 * terminal. Backoff doubles from MinDelayMs to MaxDelayMs (with jitter, so many tabs do not reconnect
 * in lockstep) and resets once the owner has seen the server answer (`markHealthy`).
 */
export const ReconnectPolicy = {
  MinDelayMs: 500,
  MaxDelayMs: 8000,
} as const;

export interface SocketDown {
  /** Consecutive failed or dropped connections. */
  attempt: number;
  /** When the next try starts (epoch ms). */
  retryAt: number;
  code: number;
}

export interface ReconnectingSocketHandlers {
  onOpen?(ws: WebSocket): void;
  onMessage(data: string | ArrayBuffer): void;
  onDown?(down: SocketDown): void;
  /** Return false to stop reconnecting after this close (e.g. the session is gone for good). */
  shouldReconnect?(ev: CloseEvent): boolean;
}

export class ReconnectingSocket {
  private ws: WebSocket | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private attempt = 0;
  private stopped = false;
  /** While false (the server is known to be down), no new connection is tried; see hold(). */
  private allowed = true;

  constructor(
    private readonly url: () => string,
    private readonly handlers: ReconnectingSocketHandlers,
  ) {}

  start(): void {
    this.stopped = false;
    this.connect();
  }

  /**
   * Another socket already knows the server is down (the events socket, which backs off on its own):
   * try nothing until it is back, then try at once. Keeps a terminal tab from knocking on a dead
   * server beside the events socket.
   */
  hold(held: boolean): void {
    if (this.allowed === !held) return;
    this.allowed = !held;
    if (held) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      return;
    }
    this.attempt = 0;
    this.retryNow();
  }

  /** Skip the rest of the backoff (the person pressed "Retry now"). */
  retryNow(): void {
    if (this.stopped || this.ws || !this.allowed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.connect();
  }

  send(frame: unknown): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  get open(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      ws.close(1000);
    }
  }

  private connect(): void {
    if (!this.allowed) return;
    const ws = new WebSocket(this.url());
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () => this.handlers.onOpen?.(ws);
    ws.onmessage = (ev: MessageEvent<string | ArrayBuffer>) => this.handlers.onMessage(ev.data);
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.stopped) return;
      if (this.handlers.shouldReconnect && !this.handlers.shouldReconnect(ev)) return;
      this.attempt += 1;
      const base = Math.min(ReconnectPolicy.MaxDelayMs, ReconnectPolicy.MinDelayMs * 2 ** (this.attempt - 1));
      const delay = Math.round(base * (0.75 + Math.random() * 0.5));
      this.handlers.onDown?.({ attempt: this.attempt, retryAt: Date.now() + delay, code: ev.code });
      if (!this.allowed) return;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.connect();
      }, delay);
    };
  }

  /** Called by the owner once the server has said hello: the connection is good. */
  markHealthy(): void {
    this.attempt = 0;
  }
}
