/**
 * The SQLite database, run in a worker thread so that no statement (and no wait for another
 * process's write lock) ever holds the gateway's event loop. Two connections: a read-only one for
 * SELECTs, which WAL mode never blocks, and one for writes and transactions. Both wait for a lock
 * asynchronously (busy_timeout is 0; a busy statement is tried again on a timer), so reads keep
 * flowing while a write waits for another process to let go.
 */
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import type { SqliteRequest, SqliteResponse, SqliteThreadOptions } from './sqlite-protocol.js';

const options = workerData as SqliteThreadOptions;
const port = parentPort!;

function open(readonly: boolean): SQLite.Database {
  const db = new SQLite(options.file, { readonly });
  db.pragma('busy_timeout = 0');
  if (!readonly) {
    // WAL lets readers (here and in other processes) go on while one connection writes.
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
  }
  return db;
}

/** Prepared statements by SQL text; the store issues a small, fixed set of shapes. */
class Connection {
  private readonly statements = new Map<string, SQLite.Statement>();
  constructor(readonly db: SQLite.Database) {}

  run(sql: string, parameters: readonly unknown[]): Omit<Extract<SqliteResponse, { rows: unknown }>, 'id'> {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      if (this.statements.size >= 500) this.statements.clear();
      this.statements.set(sql, statement);
    }
    if (statement.reader) return { rows: statement.all(parameters) };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { rows: [], changes: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }
}

const writer = new Connection(open(false));
const reader = new Connection(open(true));

const isBusy = (error: unknown) => typeof (error as { code?: unknown })?.code === 'string' && (error as { code: string }).code.startsWith('SQLITE_BUSY');

function execute(request: SqliteRequest, startedAt: number, attempt: number): void {
  const connection = request.connection === 'read' ? reader : writer;
  try {
    port.postMessage({ id: request.id, ...connection.run(request.sql, request.parameters) } satisfies SqliteResponse);
  } catch (error) {
    if (isBusy(error) && Date.now() - startedAt < options.busyTimeoutMs) {
      // Another process holds the lock: ask again shortly, serving other requests meanwhile.
      setTimeout(() => execute(request, startedAt, attempt + 1), Math.min(5 * 2 ** attempt, 100));
      return;
    }
    const { message, code } = error as { message?: string; code?: string };
    port.postMessage({ id: request.id, error: { message: message ?? String(error), code } } satisfies SqliteResponse);
  }
}

port.on('message', (request: SqliteRequest | 'close') => {
  if (request === 'close') {
    reader.db.close();
    writer.db.close();
    port.close();
    return;
  }
  execute(request, Date.now(), 0);
});
port.postMessage('ready');
