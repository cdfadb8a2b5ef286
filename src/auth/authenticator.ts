import type { Logger } from 'pino';
import type { ChangeFeed } from '../changes/change-feed.js';
import { GatewayError } from '../core/errors.js';
import type { KeyRecord, KeysRepository } from '../store/store.js';
import type { SecretHasher } from './key-secret.js';
import type { Principal } from '../core/principal.js';

/** Who is calling, once the key checks out. */

interface CachedKey {
  readonly principal: Principal;
  readonly status: KeyRecord['status'];
  readonly expiresAt: number | null;
  /** Its account is disabled (a change to it bumps the key version too, so the cache follows). */
  readonly accountDisabled: boolean;
}

/** How often the key version is polled: a change made by another process is seen within this, notification or not. */
const VERSION_POLL_MS = 250;
/** A store that keeps failing the poll is reported at most this often. */
const POLL_WARNING_EVERY_MS = 30_000;
/** Unknown secrets remembered, so a flood of bad keys does not reach the store each time. */
const MAX_NEGATIVE_ENTRIES = 10_000;

/**
 * Turns a presented secret into a Principal. Keys are cached in memory by their keyed hash; every
 * write to any key bumps a version in the store, and reading a changed version clears the cache.
 * The version is read when the change feed announces a key change (a key created, disabled or
 * revoked by the CLI or another instance takes effect at once) and polled as well, which bounds
 * the delay by the poll interval when a notification is lost. Expiry is checked on every request
 * against the cached expiry time. While the store cannot be read, cached keys go on being served.
 */
export class Authenticator {
  private readonly known = new Map<string, CachedKey>();
  private readonly unknown = new Set<string>();
  private readonly lastUsed = new Map<string, number>();
  private version = -1;
  private poller: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  /** The version read under way, and the one queued behind it (a notification arrived meanwhile). */
  private reading: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  private lastPollWarning = -Infinity;
  /** Lookups the cache answered (a known key, or a secret known to be no key) and those that read the store. */
  readonly cache = { hits: 0, misses: 0 };

  constructor(
    private readonly keys: KeysRepository,
    private readonly hasher: SecretHasher,
    private readonly logger: Logger,
    /** Named in the warning when the store cannot be polled (`sqlite`, `postgres`). */
    private readonly storeName: string,
    private readonly now: () => number = Date.now,
  ) {}

  async start(changes?: Pick<ChangeFeed, 'subscribe'>): Promise<void> {
    await this.refresh();
    this.unsubscribe = changes?.subscribe((topic) => {
      if (topic === 'keys') this.poll();
    });
    this.poller = setInterval(() => this.poll(), VERSION_POLL_MS);
    this.poller.unref();
  }

  stop(): void {
    clearInterval(this.poller);
    this.unsubscribe?.();
  }

  /**
   * Reads the key version now; the cache empties if it moved. Reads do not overlap: a call while
   * one is under way is served by one more read after it (which sees any change committed before
   * the call), shared by every call made meanwhile.
   */
  refresh(): Promise<void> {
    if (this.queued !== undefined) return this.queued;
    const next = this.reading.then(() => {
      this.queued = undefined;
      return this.readVersion();
    });
    this.queued = next;
    this.reading = next.catch(() => undefined);
    return next;
  }

  async authenticate(secret: string | undefined): Promise<Principal> {
    if (secret === undefined || secret === '') {
      throw new GatewayError(
        'missing_api_key',
        'You did not provide an API key. Send it as `Authorization: Bearer <key>` (model listings also take `x-api-key`, `x-goog-api-key` or `?key=`).',
      );
    }
    const hash = this.hasher.hash(secret);
    let entry = this.known.get(hash);
    if (entry === undefined) {
      if (this.unknown.has(hash)) {
        this.cache.hits++;
        throw invalidKey();
      }
      this.cache.misses++;
      entry = await this.load(hash);
    } else {
      this.cache.hits++;
    }
    const now = this.now();
    if (entry.status === 'disabled') throw new GatewayError('key_disabled', 'This API key is disabled. Check /app/keys.');
    if (entry.status === 'revoked') throw new GatewayError('key_revoked', 'This API key has been revoked. Check /app/keys.');
    if (entry.accountDisabled) throw new GatewayError('key_disabled', 'The account of this API key is disabled. Ask an admin of this gateway.');
    if (entry.expiresAt !== null && entry.expiresAt <= now) {
      throw new GatewayError('key_expired', 'This API key has expired. Check /app/keys.');
    }
    this.lastUsed.set(entry.principal.keyId, now);
    return entry.principal;
  }

  /** Last-used times gathered since the previous call, for the ledger to write in its batch. */
  takeLastUsed(): Map<string, number> {
    const taken = new Map(this.lastUsed);
    this.lastUsed.clear();
    return taken;
  }

  private async load(hash: string): Promise<CachedKey> {
    // A lookup that straddles a version change may have read a stale row: use it once, cache it not.
    const versionAtStart = this.version;
    let record: KeyRecord | undefined;
    try {
      record = await this.keys.findBySecretHash(hash);
    } catch (error) {
      throw new GatewayError('store_failure', 'The key store is unavailable; try again shortly.', { cause: error });
    }
    const cacheable = this.version === versionAtStart;
    if (record === undefined) {
      if (cacheable) {
        if (this.unknown.size >= MAX_NEGATIVE_ENTRIES) this.unknown.clear();
        this.unknown.add(hash);
      }
      throw invalidKey();
    }
    const entry: CachedKey = {
      principal: {
        keyId: record.id,
        accountId: record.accountId,
        accountName: record.accountName,
        allowedModels: record.models === null ? null : new Set(record.models),
        keyLimits: record.limits,
        accountLimits: record.accountLimits,
      },
      status: record.status,
      expiresAt: record.expiresAt,
      accountDisabled: record.accountDisabled,
    };
    if (cacheable) this.known.set(hash, entry);
    return entry;
  }

  /** A refresh from the poll or a notification: a failure is reported (now and then), and the cache serves on. */
  private poll(): void {
    this.refresh().catch((error: unknown) => {
      const now = Date.now();
      if (now - this.lastPollWarning < POLL_WARNING_EVERY_MS) return;
      this.lastPollWarning = now;
      this.logger.warn(
        { store: this.storeName, err: error instanceof Error ? error.message : String(error) },
        `cannot read the key version from the ${this.storeName} store: key changes are not seen meanwhile, cached keys go on being served (reported at most every 30 s)`,
      );
    });
  }

  private async readVersion(): Promise<void> {
    const version = await this.keys.version();
    if (version !== this.version) {
      this.version = version;
      this.known.clear();
      this.unknown.clear();
    }
  }
}

function invalidKey(): GatewayError {
  return new GatewayError('invalid_api_key', 'Incorrect API key provided. Check /app/keys for your keys.');
}
