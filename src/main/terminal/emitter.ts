/** A typed event emitter small enough to read: listeners that throw are isolated from each other. */
export class Emitter<Events extends Record<string, unknown>> {
  private readonly listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => set!.delete(listener as (payload: never) => void);
  }

  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    // A Set may lose members while it is iterated (a listener removing itself): no copy needed on the hot path.
    for (const l of set) {
      try {
        (l as (p: Events[K]) => void)(payload);
      } catch (err) {
        // One broken subscriber (a closed socket, a bug in a door) must not stop the others or the PTY.
        console.error(`ptydeck: ${String(event)} listener failed:`, err);
      }
    }
  }
}
