/**
 * How a change committed by one process (a key disabled, a model registered) reaches the caches of
 * every other: a notification on a shared channel. The store calls `publish` after each committed
 * change to keys or the catalogue; the caches made from the store (VersionedCache: the
 * Authenticator's keys, the LiveCatalogue) subscribe and re-read the store's change counter at once.
 * Notifications only say "look now": the counters in the store stay the truth, and each cache still
 * polls them, so a notification lost (the channel down, a reconnect) is made up for within the poll interval.
 */
export type ChangeTopic = 'keys' | 'catalogue' | 'mcp';

export const CHANGE_TOPICS: readonly ChangeTopic[] = ['keys', 'catalogue', 'mcp'];

export type ChangeListener = (topic: ChangeTopic) => void;

/** Called by the store after a change to keys or the catalogue has committed; it never throws. */
export type ChangeHook = (topic: ChangeTopic) => Promise<void>;

export interface ChangeFeed {
  /** Which channel carries the notifications: `redis`, `postgres`, or `none` (polling only). */
  readonly name: 'redis' | 'postgres' | 'none';
  /** True while notifications can be sent and received; false during an outage (polling carries on). */
  readonly healthy: boolean;
  /** Tells every subscribed process, this one included. Never rejects: a failure is logged, and polling covers it. */
  publish(topic: ChangeTopic): Promise<void>;
  /**
   * Calls `listener` for each notification, and with every topic after a reconnection (what was
   * sent meanwhile is lost). Returns the unsubscribe function.
   */
  subscribe(listener: ChangeListener): () => void;
  close(): Promise<void>;
}

/** PostgreSQL's LISTEN/NOTIFY channel: one per database, so it needs no prefix. */
export const POSTGRES_CHANGE_CHANNEL = 'sluice_changes';

export function isChangeTopic(value: unknown): value is ChangeTopic {
  return value === 'keys' || value === 'catalogue' || value === 'mcp';
}

/** The listeners of a feed; a listener that throws does not keep the others from hearing. */
export class ChangeListeners {
  private readonly listeners = new Set<ChangeListener>();

  add(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(topic: ChangeTopic): void {
    for (const listener of this.listeners) {
      try {
        listener(topic);
      } catch {
        // A listener handles its own failures (they refresh from the store and log there).
      }
    }
  }

  /** After a reconnection: whatever was published meanwhile was missed, so every cache looks again. */
  emitAll(): void {
    for (const topic of CHANGE_TOPICS) this.emit(topic);
  }
}

/** No channel: caches see changes by polling the store's counters alone. */
export class PollingOnly implements ChangeFeed {
  readonly name = 'none';
  readonly healthy = true;

  async publish(): Promise<void> {}

  subscribe(): () => void {
    return () => undefined;
  }

  async close(): Promise<void> {}
}
