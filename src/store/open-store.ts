import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from './kysely.js';
import type { Database } from './schema.js';
import { SqlStore } from './sql-store.js';
import type { Store } from './store.js';

export const SQLITE_FILE = 'sluice.db';

/** Opens (creating and migrating as needed) the embedded SQLite store in a data directory. */
export async function openSqliteStore(dataDir: string): Promise<Store> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const database = new SQLite(join(dataDir, SQLITE_FILE));
  // WAL lets the CLI write while a running gateway reads; the busy timeout makes the two wait
  // for each other instead of failing.
  database.pragma('journal_mode = WAL');
  database.pragma('busy_timeout = 5000');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  const store = new SqlStore(new Kysely<Database>({ dialect: new SqliteDialect({ database }) }), 'sqlite');
  await store.migrate();
  return store;
}
