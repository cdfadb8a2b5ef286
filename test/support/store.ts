import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';

/**
 * The store the suite runs against: SQLite in each data directory (the default), or with
 * SLUICE_TEST_STORE=postgres a fresh PostgreSQL database per data directory, which every gateway
 * and CLI command on that directory is given as SLUICE_DATABASE_URL.
 */
export const STORE_MODE: 'sqlite' | 'postgres' = process.env.SLUICE_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** A superuser connection to the test server's maintenance database; test databases are made and dropped through it. */
export const PG_ADMIN_URL = process.env.SLUICE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const DATABASE_PREFIX = 'sluice_t_';
/** Test databases by resolved data directory. */
const byDataDir = new Map<string, Promise<string>>();
/** Every database this process made, dropped when it exits. */
const made: string[] = [];
let swept = false;

process.once('exit', () => dropDatabasesSync(made));

/** Bigint and numeric as numbers, as the store's own pool reads them, so rows compare alike on both stores. */
const types = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === 20 || oid === 1700 ? Number : pg.types.getTypeParser(oid, format as 'text')),
} as pg.CustomTypesConfig;

export function databaseUrl(name: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one statement on a database of the test server (a fresh connection each time: nothing is left open to keep a test process alive). */
export async function pgQuery<T>(url: string, text: string, params: readonly unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, types });
  await client.connect();
  try {
    return (await client.query(text, [...params])).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * A new, empty database, dropped when this process exits. Its name carries this process's id, so
 * that the first database a test process makes also sweeps those left by test processes that were
 * killed before their exit handler ran.
 */
export async function createDatabase(): Promise<{ name: string; url: string }> {
  if (!swept) {
    swept = true;
    const names = await pgQuery<{ datname: string }>(PG_ADMIN_URL, `SELECT datname FROM pg_database WHERE datname LIKE '${DATABASE_PREFIX}%'`);
    const orphans = names.map((row) => row.datname).filter((name) => !isRunning(Number(/^sluice_t_(\d+)_/.exec(name)?.[1])));
    for (const name of orphans) await pgQuery(PG_ADMIN_URL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {});
  }
  const name = `${DATABASE_PREFIX}${process.pid}_${randomBytes(6).toString('hex')}`;
  await pgQuery(PG_ADMIN_URL, `CREATE DATABASE "${name}"`);
  made.push(name);
  return { name, url: databaseUrl(name) };
}

/** Drops a database createDatabase made, now rather than at exit (a gateway still connected is cut off). */
export async function dropDatabase(name: string): Promise<void> {
  await pgQuery(PG_ADMIN_URL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  const index = made.indexOf(name);
  if (index !== -1) made.splice(index, 1);
}

/** Drops databases at once, synchronously (usable in an exit handler); a gateway still connected is cut off. */
export function dropDatabasesSync(names: readonly string[]): void {
  if (names.length === 0) return;
  const commands = names.flatMap((name) => ['-c', `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`]);
  const result = spawnSync('psql', [PG_ADMIN_URL, '-q', ...commands], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
  if (result.status !== 0) process.stderr.write(`test support: could not drop ${names.join(', ')}: ${result.stderr?.toString() ?? result.error?.message}\n`);
}

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The PostgreSQL URL of a data directory's store (made on first use); only in postgres mode. */
export function databaseUrlFor(dataDir: string): Promise<string> {
  const key = resolve(dataDir);
  let url = byDataDir.get(key);
  if (url === undefined) {
    url = createDatabase().then((database) => database.url);
    byDataDir.set(key, url);
  }
  return url;
}

/** What a gateway or CLI command on `dataDir` needs in its environment to use the suite's store. */
export async function storeEnv(dataDir: string): Promise<NodeJS.ProcessEnv> {
  return STORE_MODE === 'postgres' ? { SLUICE_DATABASE_URL: await databaseUrlFor(dataDir) } : {};
}

/**
 * Runs SQL on the store of a data directory, whichever it is: `?` placeholders (outside quotes)
 * become `$1`, `$2`… for PostgreSQL. Returns the rows (none for a statement that returns none).
 */
export async function queryStore<T = Record<string, unknown>>(dataDir: string, text: string, params: readonly unknown[] = []): Promise<T[]> {
  if (STORE_MODE === 'postgres') return pgQuery<T>(await databaseUrlFor(dataDir), numberedPlaceholders(text), params);
  const db = new SQLite(join(dataDir, 'sluice.db'));
  try {
    const statement = db.prepare(text);
    if (statement.reader) return statement.all(...params) as T[];
    statement.run(...params);
    return [];
  } finally {
    db.close();
  }
}

function numberedPlaceholders(text: string): string {
  let n = 0;
  let quoted = false;
  let out = '';
  for (const char of text) {
    if (char === "'") quoted = !quoted;
    out += char === '?' && !quoted ? `$${++n}` : char;
  }
  return out;
}

/**
 * Whether `text` is anywhere in the store: in the SQLite file or its write-ahead log (every byte,
 * freed pages included), or in any row of any table of the PostgreSQL database (each row as text).
 */
export async function storeContains(dataDir: string, text: string): Promise<boolean> {
  if (STORE_MODE === 'sqlite') {
    return ['sluice.db', 'sluice.db-wal'].some((file) => existsSync(join(dataDir, file)) && readFileSync(join(dataDir, file)).includes(text));
  }
  const url = await databaseUrlFor(dataDir);
  const tables = await pgQuery<{ tablename: string }>(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
  for (const { tablename } of tables) {
    const found = await pgQuery(url, `SELECT 1 FROM "${tablename}" t WHERE strpos(t::text, $1) > 0 LIMIT 1`, [text]);
    if (found.length > 0) return true;
  }
  return false;
}

/**
 * Holds a lock that stops the usage ledger being written, from another process, as a backup, a
 * `sqlite3` shell or a DBA would: SQLite's write lock, or PostgreSQL's EXCLUSIVE lock on the ledger
 * table (plain reads go on). Until release().
 */
export async function lockLedger(dataDir: string): Promise<{ release(): Promise<void> }> {
  if (STORE_MODE === 'sqlite') {
    const db = new SQLite(join(dataDir, 'sluice.db'));
    db.exec('BEGIN IMMEDIATE');
    return {
      async release() {
        db.exec('ROLLBACK');
        db.close();
      },
    };
  }
  const client = new pg.Client({ connectionString: await databaseUrlFor(dataDir) });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE usage_ledger IN EXCLUSIVE MODE');
  return {
    async release() {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}
