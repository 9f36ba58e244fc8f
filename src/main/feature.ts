import type { ServerConfig } from './config';
import type { Door } from './api/server';
import type { PersonPresence } from './presence';
import type { SessionManager } from './terminal/manager';

/**
 * A capability built on top of the core (approvals, timeline, recordings, remotes): a folder of its own
 * under src/main/, which subscribes to the manager's and the sessions' events (session.ts
 * `SessionEvents`) and never reaches into a session's fields. It plugs into the server through a door of
 * its own (its /api routes and sockets), and doors that must consult it do so through one small
 * function it exports (e.g. `approvals.check(...)`), never by knowing its insides.
 */
export interface FeatureHost {
  manager: SessionManager;
  config: ServerConfig;
  /** PTYDECK_HOME: where a feature keeps its files (0600, see home.ts writeSecretFile). */
  home: string;
  /** How many of the person's viewer connections are open (presence.ts). */
  presence: PersonPresence;
}

export interface Feature {
  readonly name: string;
  /** Its routes and sockets, registered with every other door (same guards, same limits). */
  readonly door?: Door;
  /** Called once the server stops; flushes what it keeps. */
  stop?(): Promise<void> | void;
}

export type FeatureFactory = (host: FeatureHost) => Feature;
