/**
 * The data layer's contract. Handlers and services see only this interface; the SQL behind it is
 * written once with Kysely and runs on SQLite today and PostgreSQL when a later dialect is added.
 * Times are Unix milliseconds throughout.
 */
export type KeyStatus = 'active' | 'disabled' | 'revoked';

export interface AccountRecord {
  readonly id: string;
  readonly name: string;
  readonly createdAt: number;
}

export interface KeyRecord {
  readonly id: string;
  readonly accountId: string;
  readonly accountName: string;
  readonly name: string;
  /** The first characters of the secret and its last four, for a masked display (`sk-ab…wxyz`). */
  readonly secretPrefix: string;
  readonly secretLastFour: string;
  readonly status: KeyStatus;
  /** Model ids this key may use; null means every model. */
  readonly models: readonly string[] | null;
  readonly expiresAt: number | null;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
}

export interface NewKey {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly secretHash: string;
  readonly secretPrefix: string;
  readonly secretLastFour: string;
  readonly models: readonly string[] | null;
  readonly expiresAt: number | null;
  readonly createdAt: number;
}

export interface UsageRow {
  readonly at: number;
  readonly requestId: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly operation: string;
  readonly model: string;
  readonly providerId: string | null;
  readonly status: number;
  readonly errorKind: string | null;
  readonly stream: boolean;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** True when Sluice counted the tokens itself because the upstream reported none. */
  readonly tokensCounted: boolean;
  readonly latencyMs: number;
  /** Time to the first byte sent to the client; null when nothing was sent. */
  readonly ttfbMs: number | null;
  readonly costUsd: number;
}

export interface AccountsRepository {
  /** Returns the account of that name, creating it when missing. */
  ensure(name: string): Promise<AccountRecord>;
  byName(name: string): Promise<AccountRecord | undefined>;
}

export interface KeysRepository {
  create(key: NewKey): Promise<KeyRecord>;
  get(id: string): Promise<KeyRecord | undefined>;
  list(filter?: { accountName?: string }): Promise<KeyRecord[]>;
  findBySecretHash(secretHash: string): Promise<KeyRecord | undefined>;
  setStatus(id: string, status: KeyStatus): Promise<KeyRecord | undefined>;
  recordUse(lastUsed: ReadonlyMap<string, number>): Promise<void>;
  /** A counter bumped by every change to any key, so caches in any process can tell they are stale. */
  version(): Promise<number>;
}

export interface UsageRepository {
  append(rows: readonly UsageRow[]): Promise<void>;
  count(): Promise<number>;
  recent(limit: number): Promise<UsageRow[]>;
}

export interface Store {
  readonly dialect: 'sqlite' | 'postgres';
  readonly accounts: AccountsRepository;
  readonly keys: KeysRepository;
  readonly usage: UsageRepository;
  close(): Promise<void>;
}
