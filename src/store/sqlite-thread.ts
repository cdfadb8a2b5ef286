/**
 * The SQLite database, run in a worker thread so that no statement (and no wait for another
 * process's write lock) ever holds the gateway's event loop. Two connections: a read-only one for
 * SELECTs, which WAL mode never blocks, and one for writes and transactions. Both wait for a lock
 * asynchronously (busy_timeout is 0; a busy statement is tried again on a timer), so reads keep
 * flowing while a write waits for another process to let go.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import type { SqliteRequest, SqliteResponse, SqliteThreadOptions } from './sqlite-protocol.js';

const options = workerData as SqliteThreadOptions;
const port = parentPort!;

function open(readOnly: boolean): DatabaseSync {
  // Foreign keys are enforced by the writer only: a reader never changes a row.
  const db = new DatabaseSync(options.file, { readOnly, timeout: 0, enableForeignKeyConstraints: !readOnly });
  if (!readOnly) {
    // WAL lets readers (here and in other processes) go on while one connection writes.
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = NORMAL');
  }
  return db;
}

/** A statement that answers rows (a SELECT, or a write with RETURNING), as opposed to one that only changes them. */
interface Prepared {
  readonly statement: StatementSync;
  readonly answersRows: boolean;
}

/** Prepared statements by SQL text; the store issues a small, fixed set of shapes. */
class Connection {
  private readonly statements = new Map<string, Prepared>();
  constructor(readonly db: DatabaseSync) {}

  run(sql: string, parameters: readonly unknown[]): Omit<Extract<SqliteResponse, { rows: unknown }>, 'id'> {
    let prepared = this.statements.get(sql);
    if (prepared === undefined) {
      const statement = this.db.prepare(sql);
      prepared = { statement, answersRows: statement.columns().length > 0 };
      if (this.statements.size >= 500) this.statements.clear();
      this.statements.set(sql, prepared);
    }
    const values = parameters as SQLInputValue[];
    if (prepared.answersRows) return { rows: prepared.statement.all(...values) };
    const { changes, lastInsertRowid } = prepared.statement.run(...values);
    return { rows: [], changes: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }
}

const writer = new Connection(open(false));
const reader = new Connection(open(true));

/** SQLITE_BUSY (5), with or without an extended code in the high bits. */
const isBusy = (error: unknown) => {
  const errcode = (error as { errcode?: unknown } | undefined)?.errcode;
  return typeof errcode === 'number' && (errcode & 0xff) === 5;
};

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
