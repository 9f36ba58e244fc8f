import type { Socket } from 'node:net';

/**
 * Caps connections that have not (yet) shown a credential. Every connection starts unauthenticated;
 * the first request or upgrade on it that authenticates lifts it out. Past the cap the oldest
 * unauthenticated connection is closed: a real client authenticates on its first request and is never
 * the oldest for long, while a crowd of idle or trickling sockets (slowloris) can no longer grow. The
 * header and body deadlines (server.ts) end each of those sockets anyway; the cap bounds how many can
 * wait for them at once.
 */
export class ConnectionGate {
  /** In arrival order: a Set iterates in insertion order, so the first is the oldest. */
  private readonly unauthenticated = new Set<Socket>();

  constructor(private readonly cap: number) {}

  opened(sock: Socket): void {
    this.unauthenticated.add(sock);
    sock.once('close', () => this.unauthenticated.delete(sock));
    while (this.unauthenticated.size > this.cap) {
      const oldest = this.unauthenticated.values().next().value as Socket;
      this.unauthenticated.delete(oldest);
      oldest.destroy();
    }
  }

  authenticated(sock: Socket | null | undefined): void {
    if (sock) this.unauthenticated.delete(sock);
  }
}
