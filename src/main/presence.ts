import { Emitter } from './terminal/emitter';

/**
 * Whether the person is here: how many of their viewer connections are open (the viewer's events
 * socket, its terminal tabs, its deck socket; the Electron window holds the same). The deck's floor
 * lease returns the floor to agents when this has been zero for a while: a floor held by nobody.
 */
export class PersonPresence {
  readonly events = new Emitter<{ change: number }>();
  private open = 0;

  get count(): number {
    return this.open;
  }

  /** A viewer connection opened; the function returned marks it closed (once). */
  enter(): () => void {
    this.open++;
    this.events.emit('change', this.open);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.open--;
      this.events.emit('change', this.open);
    };
  }
}
