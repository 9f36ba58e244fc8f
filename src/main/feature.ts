import type { ServerConfig } from './config';
import type { Door } from './api/server';
import type { PersonPresence } from './presence';
import type { SessionManager } from './terminal/manager';
import type { SecretStore } from './secret-store';
import type { Emitter } from './terminal/emitter';
import type { TimelineDetail } from '../shared/timeline';

/**
 * Something a feature did in a session that the session's own events do not show (an approval asked
 * for, decided, refused), published for other features: the timeline records it beside the session's
 * events. Publishers and readers know this shape, not each other.
 */
export interface SessionActivity {
  sessionId: string;
  /** An agent's name, `person`, or `ptydeck`. */
  who: string;
  door?: string;
  detail: TimelineDetail;
}

export interface FeatureEvents extends Record<string, unknown> {
  activity: SessionActivity;
}

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
  /** How a feature seals secrets it stores (the OS keychain in the desktop app, else the file's mode). */
  secrets: SecretStore;
  /** Shared by every feature: what one publishes (`activity`) any other may read, whichever starts first. */
  events: Emitter<FeatureEvents>;
  /** How many of the person's viewer connections are open (presence.ts). */
  presence: PersonPresence;
}

export interface Feature {
  readonly name: string;
  /** Its routes and sockets, registered with every other door (same guards, same limits). */
  readonly door?: Door;
  /** Settles once the feature can serve (the server starts after every feature is ready). */
  readonly ready?: Promise<void>;
  /** Called once the server stops; flushes what it keeps. */
  stop?(): Promise<void> | void;
}

export type FeatureFactory = (host: FeatureHost) => Feature;
