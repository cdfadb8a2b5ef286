import type { Selectable } from 'kysely';
import { CompiledQuery, Kysely, Migrator } from './kysely.js';
import type { ChangeHook } from '../changes/change-feed.js';
import { parseStoredLimits, storedLimits, type Limits } from '../core/key-limits.js';
import { ChangeCounters } from './change-counters.js';
import { migrationsFor } from './migrations.js';
import type { Database } from './schema.js';
import { SqlCatalogue } from './sql-catalogue.js';
import { SqlAccounts, SqlSignInLinks } from './sql-accounts.js';
import { SqlLoginThrottle, SqlSessions } from './sql-console.js';
import { SqlResponses } from './sql-responses.js';
import { addToDailyStatus, dayOf, SqlStatus } from './sql-status.js';
import { addToUsageDaily, ROLLED_UP_COLUMNS, SqlUsageDaily, type RolledUpRow } from './sql-usage-daily.js';
import { countsAgainstProvider } from './store.js';
import { byBytes } from './text-order.js';
import type { DailyStatusRow, AccountsRepository, CatalogueRepository, KeyRecord, KeysRepository, KeyStatus, ResponsesRepository, LoginThrottleRepository, NewKey, SessionsRepository, SignInLinksRepository, StatusRepository, Store, TrafficSample, UsageDailyRepository, UsageRepository, UsageRow } from './store.js';

/** Rows per INSERT: stays far below either dialect's limit on bound parameters. */
const USAGE_INSERT_CHUNK = 500;

export interface StoreOptions {
  /** Called after each committed change to keys or the catalogue, to tell other processes (see ChangeCounters); default: nobody. */
  readonly onChange?: ChangeHook;
  /**
   * How long close() waits for statements still running (PostgreSQL: one stuck on a lock held
   * elsewhere would otherwise hold a stopping gateway); undefined: as long as they take.
   */
  readonly closeWaitMs?: number;
}

/** The Store written once in Kysely's SQL builder; the dialect is chosen by whoever opens it. */
export class SqlStore implements Store {
  readonly accounts: AccountsRepository;
  readonly keys: KeysRepository;
  readonly usage: UsageRepository;
  readonly usageDaily: UsageDailyRepository;
  readonly sessions: SessionsRepository;
  readonly signInLinks: SignInLinksRepository;
  readonly loginThrottle: LoginThrottleRepository;
  readonly catalogue: CatalogueRepository;
  readonly status: StatusRepository;
  readonly responses: ResponsesRepository;
  private readonly closeWaitMs: number | undefined;

  /**
   * @param db also used directly by maintenance commands (`sluice store copy`), never by handlers.
   * @param location where the store is, for logs (a PostgreSQL URL's password masked).
   */
  constructor(
    readonly db: Kysely<Database>,
    readonly dialect: 'sqlite' | 'postgres',
    readonly location: string,
    options: StoreOptions = {},
  ) {
    this.closeWaitMs = options.closeWaitMs;
    const counters = new ChangeCounters(dialect, options.onChange ?? (async () => undefined));
    this.accounts = new SqlAccounts(db, counters, dialect);
    this.keys = new SqlKeys(db, counters, dialect);
    this.usage = new SqlUsage(db, dialect);
    this.usageDaily = new SqlUsageDaily(db, dialect);
    this.sessions = new SqlSessions(db);
    this.signInLinks = new SqlSignInLinks(db);
    this.loginThrottle = new SqlLoginThrottle(db);
    this.catalogue = new SqlCatalogue(db, counters, dialect);
    this.status = new SqlStatus(db);
    this.responses = new SqlResponses(db);
  }

  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.db, provider: migrationsFor(this.dialect) });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  }

  /** Migrations not yet applied to this database, by name (none: it is current). */
  async pendingMigrations(): Promise<string[]> {
    const migrations = await new Migrator({ db: this.db, provider: migrationsFor(this.dialect) }).getMigrations();
    return migrations.filter((migration) => migration.executedAt === undefined).map((migration) => migration.name);
  }

  async close(): Promise<void> {
    const destroyed = this.db.destroy();
    if (this.closeWaitMs === undefined) return destroyed;
    // What such a statement was writing is still in the ledger's journal, for the next start.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([destroyed, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.closeWaitMs).unref()))]);
    clearTimeout(timer);
  }
}

const keyColumns = [
  'api_keys.id',
  'api_keys.account_id',
  'accounts.name as account_name',
  'api_keys.name',
  'api_keys.secret_prefix',
  'api_keys.secret_last_four',
  'api_keys.status',
  'api_keys.models',
  'api_keys.expires_at',
  'api_keys.created_at',
  'api_keys.last_used_at',
  'api_keys.limits',
  'accounts.limits as account_limits',
  'accounts.disabled as account_disabled',
] as const;

type KeyRow = Omit<Selectable<Database['api_keys']>, 'secret_hash' | 'updated_at'> & { account_name: string; account_limits: string | null; account_disabled: number };

function toKeyRecord(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    accountName: row.account_name,
    name: row.name,
    secretPrefix: row.secret_prefix,
    secretLastFour: row.secret_last_four,
    status: row.status as KeyStatus,
    models: row.models === null ? null : (JSON.parse(row.models) as string[]),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    limits: parseStoredLimits(row.limits),
    accountLimits: parseStoredLimits(row.account_limits),
    accountDisabled: Number(row.account_disabled) === 1,
  };
}

class SqlKeys implements KeysRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly counters: ChangeCounters,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  private selectKeys() {
    return this.db.selectFrom('api_keys').innerJoin('accounts', 'accounts.id', 'api_keys.account_id').select(keyColumns);
  }

  async create(key: NewKey): Promise<KeyRecord> {
    await this.counters.write(this.db, async (tx, bump) => {
      await tx
        .insertInto('api_keys')
        .values({
          id: key.id,
          account_id: key.accountId,
          name: key.name,
          secret_hash: key.secretHash,
          secret_prefix: key.secretPrefix,
          secret_last_four: key.secretLastFour,
          status: 'active',
          models: key.models === null ? null : JSON.stringify(key.models),
          expires_at: key.expiresAt,
          created_at: key.createdAt,
          updated_at: key.createdAt,
          last_used_at: null,
          limits: storedLimits(key.limits),
        })
        .execute();
      await bump('keys');
    });
    return (await this.get(key.id))!;
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    const row = await this.selectKeys().where('api_keys.id', '=', id).executeTakeFirst();
    return row && toKeyRecord(row);
  }

  async list(filter: { accountName?: string } = {}): Promise<KeyRecord[]> {
    let query = this.selectKeys().orderBy('api_keys.created_at').orderBy(byBytes('api_keys.id', this.dialect));
    if (filter.accountName !== undefined) query = query.where('accounts.name', '=', filter.accountName);
    return (await query.execute()).map(toKeyRecord);
  }

  async findBySecretHash(secretHash: string): Promise<KeyRecord | undefined> {
    const row = await this.selectKeys().where('api_keys.secret_hash', '=', secretHash).executeTakeFirst();
    return row && toKeyRecord(row);
  }

  async setStatus(id: string, status: KeyStatus): Promise<KeyRecord | undefined> {
    const changed = await this.counters.write(this.db, async (tx, bump) => {
      const result = await tx
        .updateTable('api_keys')
        .set({ status, updated_at: Date.now() })
        .where('id', '=', id)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await bump('keys');
      return true;
    });
    return changed ? this.get(id) : undefined;
  }

  async setLimits(id: string, limits: Limits | null): Promise<KeyRecord | undefined> {
    const changed = await this.counters.write(this.db, async (tx, bump) => {
      const result = await tx
        .updateTable('api_keys')
        .set({ limits: storedLimits(limits), updated_at: Date.now() })
        .where('id', '=', id)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await bump('keys');
      return true;
    });
    return changed ? this.get(id) : undefined;
  }

  async recordUse(lastUsed: ReadonlyMap<string, number>): Promise<void> {
    if (lastUsed.size === 0) return;
    // Not a key change for caches: last-used time does not decide whether a key is accepted.
    // Keys in id order, so that two processes updating the same keys wait for each other rather than deadlock.
    const ordered = [...lastUsed].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    await this.db.transaction().execute(async (tx) => {
      for (const [id, at] of ordered) {
        await tx
          .updateTable('api_keys')
          .set({ last_used_at: at })
          .where('id', '=', id)
          .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
          .execute();
      }
    });
  }

  async version(): Promise<number> {
    const row = await this.db.selectFrom('meta').select('value').where('name', '=', 'keys_version').executeTakeFirstOrThrow();
    return Number(row.value);
  }
}

class SqlUsage implements UsageRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  async append(rows: readonly UsageRow[]): Promise<void> {
    if (rows.length === 0) return;
    const ledgerRows = rows.map(toLedgerRow);
    await this.db.transaction().execute(async (tx) => {
      // Every row lands, or the transaction fails as a whole (an entry id stored already is an error here).
      for (let start = 0; start < ledgerRows.length; start += USAGE_INSERT_CHUNK) {
        await tx.executeQuery(ledgerInsert(this.dialect, ledgerRows.slice(start, start + USAGE_INSERT_CHUNK)));
      }
      await addToDailyStatus(tx, dailyIncrements(ledgerRows));
      await addToUsageDaily(tx, ledgerRows);
    });
  }

  async appendOnce(rows: readonly UsageRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.transaction().execute(async (tx) => {
      const inserted: (DailyInput & RolledUpRow)[] = [];
      for (let start = 0; start < rows.length; start += USAGE_INSERT_CHUNK) {
        // A row already stored is skipped, and not counted twice: only what the insert returns is counted.
        const chunk = await tx
          .insertInto('usage_ledger')
          .values(rows.slice(start, start + USAGE_INSERT_CHUNK).map(toLedgerRow))
          .onConflict((oc) => oc.column('entry_id').doNothing())
          .returning(['provider_id', 'error_kind', ...ROLLED_UP_COLUMNS])
          .execute();
        inserted.push(...chunk);
      }
      await addToDailyStatus(tx, dailyIncrements(inserted));
      await addToUsageDaily(tx, inserted);
    });
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('usage_ledger')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }


  async spendSince(scope: { keyId: string } | { accountId: string }, since: number): Promise<number> {
    const query = this.db
      .selectFrom('usage_ledger')
      .select((eb) => eb.fn.sum<number>('cost_usd').as('spent'))
      .where('at', '>=', since);
    const row = await ('keyId' in scope ? query.where('key_id', '=', scope.keyId) : query.where('account_id', '=', scope.accountId)).executeTakeFirst();
    return Number(row?.spent ?? 0);
  }

  async traffic(since: number, limit: number): Promise<TrafficSample[]> {
    const rows = await this.db
      .selectFrom('usage_ledger')
      .select(['at', 'provider_id', 'model', 'status', 'error_kind', 'latency_ms'])
      .where('at', '>=', since)
      .where('provider_id', 'is not', null)
      .orderBy('at', 'desc')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      at: Number(row.at),
      providerId: row.provider_id!,
      model: row.model,
      status: row.status,
      errorKind: row.error_kind,
      latencyMs: row.latency_ms,
    }));
  }
}

type DailyInput = Pick<Selectable<Database['usage_ledger']>, 'at' | 'provider_id' | 'model' | 'status' | 'error_kind'>;

/** The batch's requests and failures per day, provider and model, for the uptime history. */
function dailyIncrements(rows: readonly DailyInput[]): DailyStatusRow[] {
  const byKey = new Map<string, { day: number; providerId: string; model: string; requests: number; failures: number; probes: 0; probeFailures: 0 }>();
  for (const row of rows) {
    if (row.provider_id === null) continue;
    const day = dayOf(Number(row.at));
    const key = `${day}\u0000${row.provider_id}\u0000${row.model}`;
    let entry = byKey.get(key);
    if (entry === undefined) byKey.set(key, (entry = { day, providerId: row.provider_id, model: row.model, requests: 0, failures: 0, probes: 0, probeFailures: 0 }));
    entry.requests++;
    if (countsAgainstProvider(row.status, row.error_kind)) entry.failures++;
  }
  return [...byKey.values()];
}

/** The ledger's columns, in the order of toLedgerRow's fields. */
const LEDGER_COLUMNS = [
  'entry_id', 'at', 'request_id', 'account_id', 'key_id', 'operation', 'model', 'provider_id', 'status', 'error_kind', 'stream', 'prompt_tokens',
  'completion_tokens', 'cached_input_tokens', 'cache_write_tokens', 'reasoning_tokens', 'tokens_counted', 'latency_ms', 'ttfb_ms', 'cost_usd',
  'attempts', 'deployment', 'attempt_log',
] as const;

/**
 * One multi-row INSERT written as text: the ledger takes a batch every flush, and the query
 * builder's per-value parsing was the largest part of its cost on the event loop.
 */
function ledgerInsert(dialect: 'sqlite' | 'postgres', rows: readonly ReturnType<typeof toLedgerRow>[]): CompiledQuery {
  const parameters: unknown[] = [];
  const tuples: string[] = [];
  for (const row of rows) {
    const marks: string[] = [];
    for (const column of LEDGER_COLUMNS) {
      parameters.push(row[column]);
      marks.push(dialect === 'postgres' ? `$${parameters.length}` : '?');
    }
    tuples.push(`(${marks.join(', ')})`);
  }
  return CompiledQuery.raw(`insert into "usage_ledger" (${LEDGER_COLUMNS.map((c) => `"${c}"`).join(', ')}) values ${tuples.join(', ')}`, parameters);
}

function toLedgerRow(row: UsageRow) {
  return {
    entry_id: row.entryId,
    at: row.at,
    request_id: row.requestId,
    account_id: row.accountId,
    key_id: row.keyId,
    operation: row.operation,
    model: row.model,
    provider_id: row.providerId,
    status: row.status,
    error_kind: row.errorKind,
    stream: row.stream ? 1 : 0,
    prompt_tokens: row.promptTokens,
    completion_tokens: row.completionTokens,
    cached_input_tokens: row.cachedInputTokens,
    cache_write_tokens: row.cacheWriteTokens,
    reasoning_tokens: row.reasoningTokens,
    tokens_counted: row.tokensCounted ? 1 : 0,
    latency_ms: row.latencyMs,
    ttfb_ms: row.ttfbMs,
    cost_usd: row.costUsd,
    attempts: row.attempts,
    deployment: row.deployment,
    attempt_log: row.attemptLog === null ? null : JSON.stringify(row.attemptLog),
  };
}

