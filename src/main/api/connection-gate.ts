import type { Socket } from 'node:net';

/**
 * Caps connections that have not (yet) shown a credential. Every connection starts unauthenticated;
 * the first request or upgrade on it that authenticates lifts it out. Past the cap one is closed: the
 * oldest that has no request in progress (a silent socket, or one still trickling its headers: a
 * slowloris), else the oldest of all. A real client authenticates on its first request, and an answer
 * to an unauthenticated one (a 401, /health, the login page) is not cut while it is being given. The
 * header and body deadlines (server.ts) end every waiting socket anyway; the cap bounds how many can
 * wait at once.
 */
export class ConnectionGate {
  /** In arrival order: a Set iterates in insertion order, so the first is the oldest. */
  private readonly unauthenticated = new Set<Socket>();
  /** Sockets with a request whose headers have arrived and whose answer has not finished. */
  private readonly answering = new Set<Socket>();
  /** Each socket's peer as it arrived (a raw socket under TLS may no longer say, see `replaced`). */
  private readonly peers = new WeakMap<Socket, string>();

  constructor(private readonly cap: number) {}

  opened(sock: Socket): void {
    this.peers.set(sock, `${sock.remoteAddress}|${sock.remotePort}`);
    this.unauthenticated.add(sock);
    sock.once('close', () => {
      this.unauthenticated.delete(sock);
      this.answering.delete(sock);
    });
    while (this.unauthenticated.size > this.cap) {
      let victim: Socket | undefined;
      for (const s of this.unauthenticated) {
        if (!this.answering.has(s)) {
          victim = s;
          break;
        }
      }
      victim ??= this.unauthenticated.values().next().value as Socket;
      this.unauthenticated.delete(victim);
      victim.destroy();
    }
  }

  /**
   * A TLS socket whose handshake finished, in place of its raw socket (the one with the same peer
   * address and port), which keeps its place in the arrival order's count no longer.
   */
  replaced(tls: Socket): void {
    const peer = `${tls.remoteAddress}|${tls.remotePort}`;
    for (const s of this.unauthenticated) {
      if (s !== tls && this.peers.get(s) === peer) {
        this.unauthenticated.delete(s);
        break;
      }
    }
    this.opened(tls);
  }

  /** A request's headers arrived on `sock`; `done` is called when its answer has finished (or failed). */
  requestStarted(sock: Socket, done: (end: () => void) => void): void {
    if (!this.unauthenticated.has(sock)) return;
    this.answering.add(sock);
    done(() => this.answering.delete(sock));
  }

  authenticated(sock: Socket | null | undefined): void {
    if (!sock) return;
    this.unauthenticated.delete(sock);
    this.answering.delete(sock);
  }
}
