import type { Feature, FeatureHost } from '../feature';
import { remotesDoor } from './door';
import { RemotesHub } from './hub';
import { RemoteStore } from './store';

/**
 * Remotes: other terminal servers whose sessions the deck shows and drives beside its own (another
 * ptydeck with full fidelity, or an AIO Sandbox endpoint). See docs/REMOTES.md.
 */
export function remotesFeature(host: FeatureHost): Feature {
  const store = new RemoteStore(host.home, host.secrets);
  const hub = new RemotesHub(store);
  return {
    name: 'remotes',
    door: remotesDoor(store, hub),
    stop: () => hub.stop(),
  };
}
