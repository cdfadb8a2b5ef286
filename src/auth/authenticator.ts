import { GatewayError } from '../errors.js';
import type { KeyRecord, KeysRepository } from '../store/store.js';
import type { SecretHasher } from './key-secret.js';

/** Who is calling, once the key checks out. */
export interface Principal {
  readonly keyId: string;
  readonly accountId: string;
  readonly accountName: string;
  /** Model ids the key may use; null means every model. */
  readonly allowedModels: ReadonlySet<string> | null;
}

interface CachedKey {
  readonly principal: Principal;
  readonly status: KeyRecord['status'];
  readonly expiresAt: number | null;
}

/** How often the key version is polled: a change made by another process is seen within this. */
const VERSION_POLL_MS = 250;
/** Unknown secrets remembered, so a flood of bad keys does not reach the store each time. */
const MAX_NEGATIVE_ENTRIES = 10_000;

/**
 * Turns a presented secret into a Principal. Keys are cached in memory by their keyed hash; every
 * write to any key bumps a version in the store, and a poll of that version clears the cache, so
 * a key created, disabled or revoked by the CLI or another instance takes effect within the poll
 * interval. Expiry is checked on every request against the cached expiry time.
 */
export class Authenticator {
  private readonly known = new Map<string, CachedKey>();
  private readonly unknown = new Set<string>();
  private readonly lastUsed = new Map<string, number>();
  private version = -1;
  private poller: NodeJS.Timeout | undefined;

  constructor(
    private readonly keys: KeysRepository,
    private readonly hasher: SecretHasher,
    private readonly now: () => number = Date.now,
  ) {}

  async start(): Promise<void> {
    await this.refreshVersion();
    this.poller = setInterval(() => void this.refreshVersion().catch(() => undefined), VERSION_POLL_MS);
    this.poller.unref();
  }

  stop(): void {
    clearInterval(this.poller);
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
      if (this.unknown.has(hash)) throw invalidKey();
      entry = await this.load(hash);
    }
    const now = this.now();
    if (entry.status === 'disabled') throw new GatewayError('key_disabled', 'This API key is disabled. Check /app/keys.');
    if (entry.status === 'revoked') throw new GatewayError('key_revoked', 'This API key has been revoked. Check /app/keys.');
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
      },
      status: record.status,
      expiresAt: record.expiresAt,
    };
    if (cacheable) this.known.set(hash, entry);
    return entry;
  }

  private async refreshVersion(): Promise<void> {
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
