import type { Feature, FeatureFactory } from '../feature';
import { deckDoor } from './door';
import { FloorLease } from './floor-lease';
import { Pauses } from './pause';
import { SizeKeeper } from './size-keeper';

/**
 * The supervisor's deck, on the server: what a person watching many agents needs beside each terminal.
 * The floor lease (a floor held by nobody goes back to the agent), pausing and resuming agents, the
 * agent's size given back when a person lets go, and glances of every screen for the overview. It rides
 * on the session and manager events only (feature.ts).
 */
export const deckFeature: FeatureFactory = (host): Feature => {
  const leaseMs = host.config.floorLeaseSecs * 1000;
  const lease = new FloorLease(host.manager, host.presence, leaseMs);
  const pauses = new Pauses(host.manager, host.presence, leaseMs);
  const sizes = new SizeKeeper(host.manager);
  return {
    name: 'deck',
    door: deckDoor(pauses),
    stop() {
      lease.stop();
      pauses.stop();
      sizes.stop();
    },
  };
};
