import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CustomTypesConfig } from 'pg';
import { UserError } from '../core/user-error.js';
import { CompiledQuery, Kysely, PostgresDialect, sql } from './kysely.js';
import type { Database } from './schema.js';
import { SqlStore, type StoreOptions } from './sql-store.js';
import { ThreadedSqliteDialect } from './threaded-sqlite.js';
import { maskUrl } from '../core/masked-url.js';

export const SQLITE_FILE = 'sluice.db';

/** Where the store lives: the embedded SQLite file of a data directory, or a PostgreSQL database shared by replicas. */
export type StoreLocation = { readonly kind: 'sqlite'; readonly dataDir: string } | { readonly kind: 'postgres'; readonly url: string };

/**
 * How long a write waits for another process (the CLI, a backup, a `sqlite3` shell) to release the
 * database before it fails. It waits in the store's thread, never in the event loop; the ledger
 * tries a failed batch again.
 */
const BUSY_TIMEOUT_MS = 10_000;
/** PostgreSQL's counterpart of the busy timeout: a statement waiting longer for a lock fails, and the ledger tries again. */
const PG_LOCK_TIMEOUT_MS = 10_000;
/** An unreachable server (a dropped SYN, a wrong host) fails start-up after this rather than hanging it. */
const PG_CONNECT_TIMEOUT_MS = 10_000;
/** How long closing waits for statements still running; see SqlStore.close. */
const PG_CLOSE_WAIT_MS = 2_000;
/** Connections per process; a gateway's requests mostly read cached keys and the catalogue, so few are busy at once. */
const PG_POOL_SIZE = 10;
const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** The location from the settings: PostgreSQL when a database URL is given, else the data directory's SQLite file. */
export function storeLocation(settings: { readonly dataDir: string; readonly databaseUrl: string | undefined }): StoreLocation {
  if (settings.databaseUrl === undefined) return { kind: 'sqlite', dataDir: settings.dataDir };
  checkPostgresUrl(settings.databaseUrl, '--database');
  return { kind: 'postgres', url: settings.databaseUrl };
}

/** Throws a UserError unless `url` is a postgres:// or postgresql:// URL; the message never repeats the URL (it may hold a password). */
export function checkPostgresUrl(url: string, what: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UserError(`${what}: not a URL; expected postgres://USER:PASSWORD@HOST:PORT/DATABASE`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new UserError(`${what}: expected a postgres:// URL, not ${parsed.protocol}//…`);
  }
}

/** Where the store is, for logs: the SQLite file, or the masked URL. */
export function describeLocation(location: StoreLocation): string {
  return location.kind === 'sqlite' ? join(location.dataDir, SQLITE_FILE) : maskUrl(location.url);
}

/**
 * Opens (creating and migrating as needed) the store at `location`. `migrate: false` (`sluice
 * doctor`) leaves the schema as it is; the SQLite file must then exist.
 */
export async function openStore(location: StoreLocation, options: StoreOptions & { logger?: Logger; migrate?: boolean } = {}): Promise<SqlStore> {
  return location.kind === 'sqlite' ? openSqliteStore(location.dataDir, options) : openPostgresStore(location.url, options, options.logger);
}

/** Opens (creating and migrating as needed) the embedded SQLite store in a data directory. */
export async function openSqliteStore(dataDir: string, options: StoreOptions & { migrate?: boolean } = {}): Promise<SqlStore> {
  if (options.migrate !== false) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, SQLITE_FILE);
  const dialect = new ThreadedSqliteDialect({ file, busyTimeoutMs: BUSY_TIMEOUT_MS });
  return migrated(new SqlStore(new Kysely<Database>({ dialect }), 'sqlite', file, options), options.migrate);
}

/** The store once migrated (unless `migrate` is false); closed if the migration fails. */
async function migrated(store: SqlStore, migrate = true): Promise<SqlStore> {
  if (!migrate) return store;
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

/**
 * Opens (migrating as needed) a PostgreSQL store. Replicas starting together migrate once: Kysely's
 * migrator holds a PostgreSQL advisory lock while it runs, and the others find the work done.
 * bigint and numeric columns (times, ids, counts, sums) come back as numbers, as they do from
 * SQLite, through parsers on this pool only; they stay far below 2^53.
 */
async function openPostgresStore(url: string, options: StoreOptions & { migrate?: boolean }, logger: Logger | undefined): Promise<SqlStore> {
  // Loaded only here, so that an embedded gateway does not carry the driver.
  const { default: pg } = await import('pg');
  const masked = maskUrl(url);
  const toNumber = (value: string) => Number(value);
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID || oid === NUMERIC_OID ? toNumber : pg.types.getTypeParser(oid, format as 'text'),
  } as CustomTypesConfig;
  const pool = new pg.Pool({ connectionString: url, application_name: 'sluice', connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS, max: PG_POOL_SIZE, types });
  // An idle connection the server drops (a restart, a failover) is reported here; the pool replaces
  // it on the next query. Without a listener the error would end the process.
  const connectionFailed = (error: Error) => logger?.warn({ err: { message: redact(errorMessage(error), url) }, store: masked }, 'store: a PostgreSQL connection failed');
  pool.on('error', connectionFailed);
  // A connection lost while checked out (between a transaction's statements, say) is reported on
  // the client itself, where the pool does not listen: the statement fails and the ledger tries again.
  pool.on('connect', (client) => client.on('error', connectionFailed));
  const dialect = new PostgresDialect({
    pool,
    onCreateConnection: async (connection) => {
      await connection.executeQuery(CompiledQuery.raw(`set lock_timeout = ${PG_LOCK_TIMEOUT_MS}`));
    },
  });
  const store = new SqlStore(new Kysely<Database>({ dialect }), 'postgres', masked, { ...options, closeWaitMs: PG_CLOSE_WAIT_MS });
  try {
    await sql`select 1`.execute(store.db);
  } catch (error) {
    await store.close();
    throw new UserError(`cannot open the database ${masked}: ${redact(errorMessage(error), url)}`);
  }
  return migrated(store, options.migrate);
}

/** A driver error's message; a refused connection to a name with several addresses is an AggregateError with none of its own. */
function errorMessage(error: unknown): string {
  if (error instanceof AggregateError && error.message === '') return error.errors.map(errorMessage).join('; ');
  if (error instanceof Error) return error.message || ((error as NodeJS.ErrnoException).code ?? error.name);
  return String(error);
}

/** The message without the URL's password, should a driver ever quote it. */
function redact(message: string, url: string): string {
  let password = '';
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    // checkPostgresUrl has refused unparsable URLs before any connection is tried.
  }
  return password === '' ? message : message.split(password).join('***');
}
