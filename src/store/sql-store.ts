import { Kysely, Migrator, sql } from './kysely.js';
import type { ChangeHook } from '../changes/change-feed.js';
import { ChangeCounters } from './change-counters.js';
import { migrationsFor } from './migrations.js';
import type { Database } from './schema.js';
import { SqlAccounts, SqlSignInLinks } from './sql-accounts.js';
import { SqlCatalogue } from './sql-catalogue.js';
import { SqlLoginThrottle, SqlSessions } from './sql-console.js';
import { SqlKeys } from './sql-keys.js';
import { SqlMcpServers } from './sql-mcp-servers.js';
import { SqlResponses } from './sql-responses.js';
import { SqlStatus } from './sql-status.js';
import { SqlUsage } from './sql-usage.js';
import { SqlUsageDaily } from './sql-usage-daily.js';
import type { AccountsRepository, CatalogueRepository, KeysRepository, McpServersRepository, LoginThrottleRepository, SessionsRepository, SignInLinksRepository, StatusRepository, Store, UsageDailyRepository, UsageRepository } from './store.js';
import { type ResponsesRepository } from '../core/stored-responses.js';

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
  readonly mcpServers: McpServersRepository;
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
    this.mcpServers = new SqlMcpServers(db, counters, dialect);
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

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
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
