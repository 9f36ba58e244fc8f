import type { WebSocket } from 'ws';
import type { Principal } from './auth';

/**
 * Every open WebSocket by principal: to bound how many one principal holds, and to close an agent's
 * sockets the moment its token is revoked.
 */
export class SocketRegistry {
  private readonly byPrincipal = new Map<string, Set<WebSocket>>();

  constructor(private readonly limitPerPrincipal: number) {}

  canOpen(p: Principal): boolean {
    // The person's viewer opens a socket per visible tab; agents are the ones a limit protects against.
    if (p.kind === 'admin') return (this.byPrincipal.get(p.name)?.size ?? 0) < this.limitPerPrincipal * 8;
    return (this.byPrincipal.get(p.name)?.size ?? 0) < this.limitPerPrincipal;
  }

  add(p: Principal, ws: WebSocket): void {
    let set = this.byPrincipal.get(p.name);
    if (!set) this.byPrincipal.set(p.name, (set = new Set()));
    set.add(ws);
    ws.once('close', () => {
      set!.delete(ws);
      if (set!.size === 0 && this.byPrincipal.get(p.name) === set) this.byPrincipal.delete(p.name);
    });
  }

  closePrincipal(name: string, code: number, reason: string): void {
    for (const ws of [...(this.byPrincipal.get(name) ?? [])]) ws.close(code, reason);
  }

  closeAll(code: number, reason: string): void {
    for (const name of [...this.byPrincipal.keys()]) this.closePrincipal(name, code, reason);
  }
}
