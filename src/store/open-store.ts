import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely } from './kysely.js';
import type { Database } from './schema.js';
import { SqlStore } from './sql-store.js';
import type { Store } from './store.js';
import { ThreadedSqliteDialect } from './threaded-sqlite.js';

export const SQLITE_FILE = 'sluice.db';

/**
 * How long a write waits for another process (the CLI, a backup, a `sqlite3` shell) to release the
 * database before it fails. It waits in the store's thread, never in the event loop; the ledger
 * tries a failed batch again.
 */
const BUSY_TIMEOUT_MS = 10_000;

/** Opens (creating and migrating as needed) the embedded SQLite store in a data directory. */
export async function openSqliteStore(dataDir: string): Promise<Store> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const dialect = new ThreadedSqliteDialect({ file: join(dataDir, SQLITE_FILE), busyTimeoutMs: BUSY_TIMEOUT_MS });
  const store = new SqlStore(new Kysely<Database>({ dialect }), 'sqlite');
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
