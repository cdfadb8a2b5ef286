import { hash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ChangeFeed } from '../changes/change-feed.js';
import { VersionedCache } from '../changes/versioned-cache.js';
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

/** Unknown secrets remembered, so a flood of bad keys does not reach the store each time. */
const MAX_NEGATIVE_ENTRIES = 10_000;
/** Keys remembered at most (well under a kilobyte each); past it the one remembered longest is forgotten. */
const MAX_KNOWN_ENTRIES = 200_000;

/** The keys looked up since the key version last moved, by their secret's lookup hash (see Authenticator.lookupHash). */
interface KeyEntries {
  readonly known: Map<string, CachedKey>;
  /** Secrets known to be no key. */
  readonly unknown: Set<string>;
}

function noEntries(): KeyEntries {
  return { known: new Map(), unknown: new Set() };
}

/** A store lookup waiting for the turn's batch. */
interface PendingLookup {
  readonly promise: Promise<KeyRecord | undefined>;
  resolve(record: KeyRecord | undefined): void;
  reject(error: unknown): void;
}

/**
 * Turns a presented secret into a Principal. Keys are cached in memory by a fast salted hash of
 * the secret (the store's HMAC is computed only on a miss, to look the key up); every
 * write to any key bumps a version in the store, and a changed version empties the cache (a key
 * created, disabled or revoked by the CLI or another instance takes effect at once, or within the
 * poll interval when a notification is lost: see VersionedCache). Expiry is checked on every
 * request against the cached expiry time. While the store cannot be read, cached keys go on being served.
 */
export class Authenticator {
  private readonly entries: VersionedCache<KeyEntries>;
  private readonly lastUsed = new Map<string, number>();
  /**
   * Salts the lookup hash: a SHA-256, twenty times cheaper than the store's HMAC and as one-way
   * (secrets are long random strings), kept only in this process's memory, where the salt makes it
   * useless elsewhere.
   */
  private readonly salt = randomBytes(16).toString('base64url');
  /** Store lookups asked for in this turn of the event loop, by HMAC: read together, in one query. */
  private batch = new Map<string, PendingLookup>();
  /** Lookups the cache answered (a known key, or a secret known to be no key) and those that read the store. */
  readonly cache = { hits: 0, misses: 0 };

  constructor(
    private readonly keys: KeysRepository,
    private readonly hasher: SecretHasher,
    logger: Logger,
    /** Named in the warning when the store cannot be polled (`sqlite`, `postgres`). */
    storeName: string,
    private readonly now: () => number = Date.now,
  ) {
    this.entries = new VersionedCache(noEntries(), {
      topic: 'keys',
      version: () => keys.version(),
      load: async () => noEntries(),
      failed: (error) =>
        logger.warn(
          { store: storeName, err: error instanceof Error ? error.message : String(error) },
          `cannot read the key version from the ${storeName} store: key changes are not seen meanwhile, cached keys go on being served (reported at most every 30 s)`,
        ),
    });
  }

  start(changes?: Pick<ChangeFeed, 'subscribe'>): Promise<void> {
    return this.entries.start(changes);
  }

  stop(): void {
    void this.entries.stop();
  }

  async authenticate(secret: string | undefined): Promise<Principal> {
    if (secret === undefined || secret === '') {
      throw new GatewayError(
        'missing_api_key',
        'You did not provide an API key. Send it as `Authorization: Bearer <key>` (model listings also take `x-api-key`, `x-goog-api-key` or `?key=`).',
      );
    }
    const lookupHash = hash('sha256', this.salt + secret, 'base64url');
    const { known, unknown } = this.entries.value;
    let entry = known.get(lookupHash);
    if (entry === undefined) {
      if (unknown.has(lookupHash)) {
        this.cache.hits++;
        throw invalidKey();
      }
      this.cache.misses++;
      entry = await this.load(lookupHash, secret);
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

  private async load(lookupHash: string, secret: string): Promise<CachedKey> {
    // A lookup that straddles a version change may have read a stale row: use it once, cache it not.
    const entries = this.entries.value;
    let record: KeyRecord | undefined;
    try {
      record = await this.find(this.hasher.hash(secret));
    } catch (error) {
      throw new GatewayError('store_failure', 'The key store is unavailable; try again shortly.', { cause: error });
    }
    const cacheable = this.entries.value === entries;
    if (record === undefined) {
      if (cacheable) {
        if (entries.unknown.size >= MAX_NEGATIVE_ENTRIES) entries.unknown.clear();
        entries.unknown.add(lookupHash);
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
    if (cacheable) {
      if (entries.known.size >= MAX_KNOWN_ENTRIES) entries.known.delete(entries.known.keys().next().value!);
      entries.known.set(lookupHash, entry);
    }
    return entry;
  }

  /**
   * The key with this secret HMAC, read with the other misses of this turn of the event loop in
   * one query (a random key among many misses at every request: one query each would cost more
   * than the request), and once for many requests presenting the same new key at once.
   */
  private find(secretHash: string): Promise<KeyRecord | undefined> {
    const queued = this.batch.get(secretHash);
    if (queued !== undefined) return queued.promise;
    if (this.batch.size === 0) setImmediate(() => void this.readBatch());
    let resolve!: PendingLookup['resolve'];
    let reject!: PendingLookup['reject'];
    const promise = new Promise<KeyRecord | undefined>((yes, no) => ((resolve = yes), (reject = no)));
    this.batch.set(secretHash, { promise, resolve, reject });
    return promise;
  }

  private async readBatch(): Promise<void> {
    const batch = this.batch;
    this.batch = new Map();
    try {
      const found = await this.keys.findBySecretHashes([...batch.keys()]);
      for (const [secretHash, lookup] of batch) lookup.resolve(found.get(secretHash));
    } catch (error) {
      for (const lookup of batch.values()) lookup.reject(error);
    }
  }
}

function invalidKey(): GatewayError {
  return new GatewayError('invalid_api_key', 'Incorrect API key provided. Check /app/keys for your keys.');
}
