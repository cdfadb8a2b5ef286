import type { AttemptLogEntry } from '../core/attempts.js';
import type { Limits } from '../core/key-limits.js';
import type { ResponsesRepository } from '../core/stored-responses.js';

/**
 * The data layer's contract: one repository per kind of record. The SQL behind it is written once
 * with Kysely and runs on SQLite (embedded) and PostgreSQL (shared by replicas). A service is
 * handed the repositories it uses when it is built; a command shared by the CLI and the console
 * takes the part of an open store it uses (`Pick<Store, 'keys' | 'accounts'>`). Times are Unix
 * milliseconds throughout.
 */
export type KeyStatus = 'active' | 'disabled' | 'revoked';

export interface AccountRecord {
  readonly id: string;
  readonly name: string;
  readonly createdAt: number;
  /** Admins see and manage every account's keys and the console catalogue. */
  readonly isAdmin: boolean;
  /** False for accounts made only to own keys (e.g. by `sluice keys create`): they cannot sign in. */
  readonly hasPassword: boolean;
  /** Limits shared by every key of the account; null for none. */
  readonly limits: Limits | null;
  /** A disabled account cannot sign in, and its keys are refused. */
  readonly disabled: boolean;
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
  /** The key's own limits and its account's; null for none. */
  readonly limits: Limits | null;
  readonly accountLimits: Limits | null;
  /** The owning account is disabled: the key is refused whatever its own status. */
  readonly accountDisabled: boolean;
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
  readonly limits: Limits | null;
}

export interface UsageRow {
  /** Unique per row, so that a row written again (from a journal, after an uncertain write) is stored once. */
  readonly entryId: string;
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
  /** Of the prompt tokens: read from and written to the upstream's prompt cache. */
  readonly cachedInputTokens: number;
  readonly cacheWriteTokens: number;
  /** Of the completion tokens: the model's reasoning. */
  readonly reasoningTokens: number;
  /** True when Sluice counted the tokens itself because the upstream reported none. */
  readonly tokensCounted: boolean;
  readonly latencyMs: number;
  /** Time to the first byte sent to the client; null when nothing was sent. */
  readonly ttfbMs: number | null;
  readonly costUsd: number;
  /** The model had no price for what the request consumed (see pricing/cost.ts pricedFor): its cost of 0 is not a price. */
  readonly unpriced: boolean;
  /** Upstream attempts made (0: refused before any). */
  readonly attempts: number;
  /** The deployment of the last attempt, `provider/upstream_model`. */
  readonly deployment: string | null;
  /** Every attempt, when there was more than one or the only one failed after the upstream had the prompt: for reconciling with each provider's bill. */
  readonly attemptLog: readonly AttemptLogEntry[] | null;
  /** Of a tool call: the bytes of its arguments and of its result (absent or null on other rows). */
  readonly bytesIn?: number | null;
  readonly bytesOut?: number | null;
}

export interface AccountsRepository {
  /** Returns the account of that name, creating it when missing. */
  ensure(name: string): Promise<AccountRecord>;
  byName(name: string): Promise<AccountRecord | undefined>;
  get(id: string): Promise<AccountRecord | undefined>;
  list(): Promise<AccountRecord[]>;
  /** The stored password hash, for signing in; undefined for an unknown name or an account without one. */
  passwordHash(name: string): Promise<{ account: AccountRecord; passwordHash: string } | undefined>;
  /**
   * Gives an account console access, making the account when missing, in one transaction: a
   * password hash, or none and a link with which to set one. 'has_password': it can sign in already.
   */
  grantConsoleAccess(name: string, access: { passwordHash: string | null; isAdmin: boolean; link?: NewSignInLink }): Promise<AccountRecord | 'has_password'>;
  /**
   * Replaces the password (null: none until `link` is used) in one transaction that also ends the
   * account's sessions and its unused links; undefined for an unknown name.
   */
  resetPassword(name: string, access: { passwordHash: string | null; link?: NewSignInLink }): Promise<AccountRecord | undefined>;
  /**
   * Changes the admin flag and status in one transaction (a key change for caches); disabling also
   * ends the account's sessions. 'last_admin' (and nothing changed) when no enabled admin would be left.
   */
  update(name: string, change: { isAdmin?: boolean; disabled?: boolean }): Promise<AccountRecord | 'last_admin' | undefined>;
  /** Replaces the account's limits (a key change for caches, which hold them); undefined for an unknown name. */
  setLimits(name: string, limits: Limits | null): Promise<AccountRecord | undefined>;
}

export interface SessionRecord {
  readonly tokenHash: string;
  readonly accountId: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** The last activity recorded (at most about once a minute), for the idle timeout. */
  readonly lastSeenAt: number;
}

export interface SessionsRepository {
  create(session: SessionRecord): Promise<void>;
  /** The session with that token hash, unless at `now` it has expired or been idle for `idleMs`. */
  find(tokenHash: string, now: number, idleMs: number): Promise<SessionRecord | undefined>;
  /** Records activity of the session at `now`. */
  touch(tokenHash: string, now: number): Promise<void>;
  delete(tokenHash: string): Promise<void>;
  deleteExpired(now: number, idleMs: number): Promise<void>;
}

/** A one-time sign-in link as stored: a SHA-256 of its token, never the token. */
export interface NewSignInLink {
  readonly tokenHash: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}

export interface SignInLinksRepository {
  /** The (enabled) account a link signs in, while it is unused and unexpired at `now`. */
  find(tokenHash: string, now: number): Promise<AccountRecord | undefined>;
  /**
   * Uses a link, once, in one transaction: marks it used, sets the account's password and ends its
   * other sessions. Undefined (and nothing changed) when it is unknown, used, expired or its account disabled.
   */
  redeem(tokenHash: string, now: number, passwordHash: string): Promise<AccountRecord | undefined>;
  /** Ids of the accounts with a link still usable at `now`. */
  pending(now: number): Promise<Set<string>>;
}

export interface LoginAttempt {
  /** False when the subject was locked out: the attempt is refused, and neither counted nor checked. */
  readonly allowed: boolean;
  /** Attempts counted in the window, this one included when allowed. */
  readonly attempts: number;
  /** When the lock-out ends (0 or a past time: none). */
  readonly blockedUntil: number;
}

export interface LoginThrottleRepository {
  /**
   * One sign-in attempt, atomically across processes, before its password is checked: refused while
   * the subject is locked out at `now`; otherwise counted (from 1 again when the last attempt is
   * older than `windowMs`), and the subject locked out for `lockMs(count)` milliseconds from now.
   */
  attempt(subject: string, now: number, windowMs: number, lockMs: (attempts: number) => number): Promise<LoginAttempt>;
  clear(subject: string): Promise<void>;
}

/** A provider or model registered in the console, as stored: the configuration-file fields as JSON. */
export interface StoredProvider {
  readonly id: string;
  /** The provider's fields except its credentials (see catalogue/provider-secrets.ts). */
  readonly config: Readonly<Record<string, unknown>>;
  /** Sealed (encrypted) JSON of its credentials (api_key, headers, the clouds' keys and secrets), or null when there are none. */
  readonly secrets: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface StoredModel {
  readonly id: string;
  readonly providerId: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** A discovering provider's stored model list (see src/discovery). */
export interface DiscoveredList {
  readonly providerId: string;
  /** As stored: read with readUpstreamModels. */
  readonly models: unknown;
  /** When the list was last read from the upstream; null before the first success. */
  readonly listedAt: number | null;
  /** Why the latest listing failed, when it did (the list is the one before); no secret. */
  readonly error: string | null;
  /** The address the failed listing requested, its credentials masked; null when unknown. */
  readonly errorUrl: string | null;
  readonly errorAt: number | null;
}

/** When a provider's next listing is due, and how long a claim of it holds. */
export interface DiscoverySchedule {
  readonly intervalMs: number;
  /** After a failed listing. */
  readonly retryMs: number;
  readonly leaseMs: number;
}

/** An imported price list: its JSON document, validated when it was imported. */
export interface StoredPriceList {
  readonly document: string;
  readonly importedAt: number;
}

export interface CatalogueRepository {
  providers(): Promise<StoredProvider[]>;
  models(): Promise<StoredModel[]>;
  /** false when `create` finds the id taken, or an update finds it missing. */
  putProvider(entry: { id: string; config: object; secrets: string | null }, mode: 'create' | 'update'): Promise<boolean>;
  /** 'in_use' when a console model still names the provider. */
  deleteProvider(id: string): Promise<'deleted' | 'missing' | 'in_use'>;
  putModel(entry: { id: string; providerId: string; config: object }, mode: 'create' | 'update'): Promise<boolean>;
  deleteModel(id: string): Promise<boolean>;
  /** The price list imported by `sluice prices import`; undefined when none is. */
  priceList(): Promise<StoredPriceList | undefined>;
  /** Replaces the imported price list (null: none, back to the shipped one); false when there was none to remove. */
  putPriceList(document: string | null, importedAt: number): Promise<boolean>;
  /** A counter bumped by every change above, polled by every process to reload its catalogue. */
  version(): Promise<number>;
  discovered(): Promise<DiscoveredList[]>;
  /**
   * Claims the next listing of a provider's models, so that one process of many lists it: true when
   * no other claimant's lease is running and its turn has come at `now` (never listed, `intervalMs`
   * after the last listing, or `retryMs` after a failed one). The claim is a lease until
   * `now + leaseMs`: renewed while the listing runs, released when it ends, and lost by a process
   * that died holding it once the lease runs out.
   */
  claimDiscovery(providerId: string, claimant: string, now: number, schedule: DiscoverySchedule): Promise<boolean>;
  /** Extends the claimant's lease to `until`; false when it no longer holds it. */
  renewDiscovery(providerId: string, claimant: string, until: number): Promise<boolean>;
  /** Lets go of the claimant's lease (the schedule decides the next listing). */
  releaseDiscovery(providerId: string, claimant: string): Promise<void>;
  /** Replaces a provider's list whole; true (and the catalogue version bumped) when it changed. */
  putDiscovered(providerId: string, models: readonly object[], now: number): Promise<boolean>;
  /** Records a failed listing, keeping the list. */
  discoveryFailed(providerId: string, error: string, url: string | null, now: number): Promise<void>;
  /** Drops the lists of providers not in `keep` (gone, or no longer discovering); true when a catalogue entry went with them. */
  dropDiscovered(keep: readonly string[]): Promise<boolean>;
}

/** An upstream MCP server registered in the console (HTTP only), as stored. */
export interface StoredMcpServer {
  readonly id: string;
  /** Its configuration-file fields except the headers (url, transport, price_per_call). */
  readonly config: Readonly<Record<string, unknown>>;
  /** Sealed (encrypted) JSON of its headers, or null when it has none. */
  readonly secrets: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Console-registered MCP servers; a change bumps the catalogue's counter (and its change-feed topic). */
export interface McpServersRepository {
  list(): Promise<StoredMcpServer[]>;
  /** false when `create` finds the id taken, or an update finds it missing. */
  put(entry: { id: string; config: object; secrets: string | null }, mode: 'create' | 'update'): Promise<boolean>;
  /** false when there was no such server. */
  delete(id: string): Promise<boolean>;
  /** The MCP servers' change counter, bumped by every write (the change feed's `mcp` topic). */
  version(): Promise<number>;
}

/** One request that reached a provider, for health figures. */
export interface TrafficSample {
  readonly at: number;
  readonly providerId: string;
  readonly model: string;
  readonly status: number;
  readonly errorKind: string | null;
  readonly latencyMs: number;
}

export interface ProbeResult {
  readonly at: number;
  readonly providerId: string;
  readonly model: string;
  readonly ok: boolean;
  readonly latencyMs: number;
  readonly errorKind: string | null;
}

export interface DailyStatusRow {
  /** Days since the Unix epoch (UTC). */
  readonly day: number;
  readonly providerId: string;
  readonly model: string;
  readonly requests: number;
  readonly failures: number;
  readonly probes: number;
  readonly probeFailures: number;
}

export interface StatusRepository {
  recordProbe(result: ProbeResult): Promise<void>;
  probes(since: number): Promise<ProbeResult[]>;
  daily(sinceDay: number): Promise<DailyStatusRow[]>;
  /** Atomically claims the next probe of a provider, so that one process of many runs it. */
  claimProbe(providerId: string, now: number, intervalMs: number): Promise<boolean>;
}

export interface KeysRepository {
  create(key: NewKey): Promise<KeyRecord>;
  get(id: string): Promise<KeyRecord | undefined>;
  list(filter?: { accountName?: string }): Promise<KeyRecord[]>;
  /** The keys whose secret hashes to one of these, by that hash (a hash of no key is absent). */
  findBySecretHashes(secretHashes: readonly string[]): Promise<Map<string, KeyRecord>>;
  setStatus(id: string, status: KeyStatus): Promise<KeyRecord | undefined>;
  setLimits(id: string, limits: Limits | null): Promise<KeyRecord | undefined>;
  recordUse(lastUsed: ReadonlyMap<string, number>): Promise<void>;
  /** A counter bumped by every change to any key, so caches in any process can tell they are stale. */
  version(): Promise<number>;
}

export interface UsageRepository {
  /** New rows, in one transaction. */
  append(rows: readonly UsageRow[]): Promise<void>;
  /** Rows some of which may be stored already (a journal imported again): those are skipped. */
  appendOnce(rows: readonly UsageRow[]): Promise<void>;
  count(): Promise<number>;
  /** USD spent since a time by one key or one account, to seed a budget's counter. */
  spendSince(scope: { keyId: string } | { accountId: string }, since: number): Promise<number>;
  /** Requests that reached a provider since a time (newest first, at most `limit`). */
  traffic(since: number, limit: number): Promise<TrafficSample[]>;
}

/** What the daily usage roll-ups can be grouped by: a UTC day, an account, a key (and so its account), a model. */
export type UsageDimension = 'day' | 'account' | 'key' | 'model';

/** Which roll-ups to add up. Days are days since the Unix epoch (UTC), both ends included. */
export interface UsageFilter {
  readonly fromDay: number;
  readonly toDay: number;
  readonly accountId?: string;
  readonly keyId?: string;
  /** Only these keys (the top ones of a breakdown). */
  readonly keyIds?: readonly string[];
}

/** Sums over ledger rows: every row is a request; failed ones have a status of 400 or above. */
export interface UsageFigures {
  readonly requests: number;
  readonly failed: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costUsd: number;
  /** Requests to a model without a price for what they consumed: their spend is unknown, not $0. */
  readonly unpricedRequests: number;
}

/** One group of a roll-up summary: the figures and the values of the dimensions grouped by (the others left out). */
export interface UsageGroup extends UsageFigures {
  readonly day?: number;
  readonly accountId?: string;
  /** With 'account' or 'key': the account's name (undefined for an account no longer stored). */
  readonly accountName?: string;
  readonly keyId?: string;
  /** With 'key': the key's name (undefined for a key no longer stored). */
  readonly keyName?: string;
  readonly model?: string;
}

/**
 * The ledger added up per UTC day, account, key and model (`usage_daily`), kept in the transaction
 * that writes the ledger rows, so that reports never scan the ledger.
 */
export interface UsageDailyRepository {
  /**
   * The figures over `filter`, one group per distinct value of `by` (no dimension: one group, the
   * totals). Ordered by `by`; with `top`, the `top` groups of highest spend (then requests) instead.
   */
  summary(filter: UsageFilter, by: readonly UsageDimension[], options?: { top?: number }): Promise<UsageGroup[]>;
}

export interface Store {
  readonly dialect: 'sqlite' | 'postgres';
  /** Where the store is, for logs and messages: the SQLite file, or the PostgreSQL URL with its password masked. */
  readonly location: string;
  readonly responses: ResponsesRepository;
  readonly accounts: AccountsRepository;
  readonly keys: KeysRepository;
  readonly usage: UsageRepository;
  readonly usageDaily: UsageDailyRepository;
  readonly sessions: SessionsRepository;
  readonly signInLinks: SignInLinksRepository;
  readonly loginThrottle: LoginThrottleRepository;
  readonly catalogue: CatalogueRepository;
  readonly mcpServers: McpServersRepository;
  readonly status: StatusRepository;
  /** One trivial query (`select 1`): whether the store answers at all, for `/readyz`. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Whether a ledger row counts against its provider's health: the provider's own failures (5xx,
 * timeouts) and rate limiting. Callers' mistakes (other 4xx), callers going away (499) and failures
 * inside Sluice (any kind but `upstream_*`) say nothing about it. The daily counters
 * (SqlUsage.append) use this rule.
 */
export function countsAgainstProvider(status: number, errorKind: string | null): boolean {
  return (status >= 500 || status === 429) && errorKind !== null && errorKind.startsWith('upstream_');
}
