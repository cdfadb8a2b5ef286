import type { ChangeFeed, ChangeTopic } from './change-feed.js';

/** How often the version is polled: a change made by another process is seen within this, notification or not. */
export const VERSION_POLL_MS = 250;
/** A store that keeps failing is reported at most this often. */
const FAILURE_REPORT_EVERY_MS = 30_000;
/** The version before the first load, and after `reload`: never a stored one, so the next read loads. */
const UNKNOWN_VERSION = -1;

export interface VersionedCacheOptions<T> {
  /** The change feed's topic that announces a change to what the value is made from. */
  readonly topic: ChangeTopic;
  /** Reads the store's counter of the topic's changes. */
  readonly version: () => Promise<number>;
  /** Makes the value from the store as it is now (`previous`: the value held). */
  readonly load: (previous: T) => Promise<T>;
  /** Told of the new value in the same step that it replaces the old one. */
  readonly replaced?: (value: T) => void;
  /** Told why a refresh from the poll or the feed failed, at most every 30 s; the value held serves on meanwhile. */
  readonly failed: (error: unknown) => void;
}

/**
 * A value made from the store (the keys seen, the catalogue) that follows the store's change
 * counter for its topic, in every process. The counter is read when the change feed announces the
 * topic (a change made anywhere is seen at once) and polled every VERSION_POLL_MS as well (a lost
 * notification delays a change by that at most); the value is made again only when the counter
 * moved. Reads never overlap, and a failure keeps the value held.
 */
export class VersionedCache<T> {
  private current: T;
  private version = UNKNOWN_VERSION;
  private poller: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Settles once every read queued so far has run; never rejects. */
  private lane: Promise<void> = Promise.resolve();
  /** A read queued behind the one under way, which every refresh asked for meanwhile shares. */
  private queued: Promise<void> | undefined;
  private lastFailureReport = -Infinity;
  /** Counter reads that found the value current, and those that made it again. */
  readonly checks = { hits: 0, misses: 0 };

  constructor(
    initial: T,
    private readonly options: VersionedCacheOptions<T>,
  ) {
    this.current = initial;
  }

  get value(): T {
    return this.current;
  }

  /** Loads the value (a failure is thrown), then follows the feed and polls. */
  async start(changes?: Pick<ChangeFeed, 'subscribe'>): Promise<void> {
    await this.refresh();
    this.unsubscribe = changes?.subscribe((topic) => {
      if (topic === this.options.topic) this.poll();
    });
    this.poller = setInterval(() => this.poll(), VERSION_POLL_MS);
    this.poller.unref();
  }

  /**
   * Reads the counter now, and makes the value again if it moved; resolves once the value is as
   * the store was at the call. A call while a read is under way is served by one more read after
   * it, shared by every call made meanwhile.
   */
  refresh(): Promise<void> {
    if (this.queued !== undefined) return this.queued;
    const next = this.lane.then(() => {
      this.queued = undefined;
      return this.check();
    });
    this.queued = next;
    this.lane = next.catch(() => undefined);
    return next;
  }

  /** Makes the value again whatever the counter says, after the reads queued; `prepare` runs first, in turn. */
  reload(prepare: () => void = () => undefined): Promise<void> {
    const next = this.lane.then(() => {
      prepare();
      this.version = UNKNOWN_VERSION;
      return this.check();
    });
    this.lane = next.catch(() => undefined);
    return next;
  }

  /** Stops following; resolves once the read under way (if any) has ended. */
  stop(): Promise<void> {
    clearInterval(this.poller);
    this.unsubscribe?.();
    return this.lane;
  }

  /** A refresh from the poll or the feed: nobody waits on it, so its failure is reported here. */
  private poll(): void {
    this.refresh().catch((error: unknown) => {
      const now = Date.now();
      if (now - this.lastFailureReport < FAILURE_REPORT_EVERY_MS) return;
      this.lastFailureReport = now;
      this.options.failed(error);
    });
  }

  private async check(): Promise<void> {
    const version = await this.options.version();
    if (version === this.version) {
      this.checks.hits++;
      return;
    }
    this.checks.misses++;
    const value = await this.options.load(this.current);
    this.current = value;
    this.version = version;
    this.options.replaced?.(value);
  }
}
