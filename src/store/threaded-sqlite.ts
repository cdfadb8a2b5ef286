import { Worker } from 'node:worker_threads';
import type { DatabaseConnection, Dialect, Driver, QueryResult } from 'kysely';
import { CompiledQuery, SelectQueryNode, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from './kysely.js';
import type { SqliteRequest, SqliteResponse, SqliteThreadOptions } from './sqlite-protocol.js';

/**
 * Kysely's SQLite dialect with the database in a worker thread (sqlite-thread.ts). SELECTs outside
 * a transaction go to the thread's read-only connection and run alongside writes; every other
 * statement, and every transaction, holds the one write connection in turn.
 */
export class ThreadedSqliteDialect implements Dialect {
  constructor(private readonly options: SqliteThreadOptions) {}
  createDriver(): Driver {
    return new ThreadedSqliteDriver(this.options);
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  createAdapter() {
    return new SqliteAdapter();
  }
  createIntrospector(db: Parameters<Dialect['createIntrospector']>[0]) {
    return new SqliteIntrospector(db);
  }
}

class SqliteThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (response: SqliteResponse) => void; reject: (error: Error) => void }>();
  private nextId = 0;
  readonly ready: Promise<void>;

  constructor(options: SqliteThreadOptions) {
    this.worker = new Worker(new URL('./sqlite-thread.js', import.meta.url), { workerData: options });
    this.ready = new Promise((resolve, reject) => {
      this.worker.once('error', reject);
      this.worker.once('message', () => {
        this.worker.off('error', reject);
        resolve();
      });
    });
    this.worker.on('message', (response: SqliteResponse | 'ready') => {
      if (response === 'ready') return;
      const waiter = this.pending.get(response.id);
      this.pending.delete(response.id);
      waiter?.resolve(response);
    });
    this.worker.on('error', (error) => this.failAll(error));
    this.worker.on('exit', (code) => this.failAll(new Error(`the SQLite thread exited (code ${code})`)));
  }

  async execute<R>(connection: SqliteRequest['connection'], query: CompiledQuery): Promise<QueryResult<R>> {
    const id = this.nextId++;
    const response = await new Promise<SqliteResponse>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, connection, sql: query.sql, parameters: query.parameters } satisfies SqliteRequest);
    });
    if ('error' in response) throw Object.assign(new Error(response.error.message), { code: response.error.code });
    return { rows: response.rows as R[], numAffectedRows: response.changes, insertId: response.insertId };
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.worker.once('exit', resolve));
    this.worker.postMessage('close');
    await exited;
  }

  private failAll(error: Error): void {
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }
}

class ThreadedSqliteDriver implements Driver {
  private readonly thread: SqliteThread;
  /** The write connection's queue: a transaction or a lone write holds it until done. */
  private writeLock: Promise<void> = Promise.resolve();

  constructor(options: SqliteThreadOptions) {
    this.thread = new SqliteThread(options);
  }

  async init(): Promise<void> {
    await this.thread.ready;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new RoutedConnection(this.thread, () => this.lockWriter());
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    // IMMEDIATE takes the write lock at once, so no statement inside can meet a lock half-way.
    await (connection as RoutedConnection).begin();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as RoutedConnection).end('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as RoutedConnection).end('rollback');
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    await this.writeLock;
    await this.thread.close();
  }

  private async lockWriter(): Promise<() => void> {
    let release!: () => void;
    const previous = this.writeLock;
    this.writeLock = new Promise((resolve) => (release = resolve));
    await previous;
    return release;
  }
}

class RoutedConnection implements DatabaseConnection {
  private releaseWriter: (() => void) | undefined;

  constructor(
    private readonly thread: SqliteThread,
    private readonly lockWriter: () => Promise<() => void>,
  ) {}

  async begin(): Promise<void> {
    this.releaseWriter = await this.lockWriter();
    try {
      await this.thread.execute('write', CompiledQuery.raw('begin immediate'));
    } catch (error) {
      this.releaseWriter();
      this.releaseWriter = undefined;
      throw error;
    }
  }

  async end(statement: 'commit' | 'rollback'): Promise<void> {
    try {
      await this.thread.execute('write', CompiledQuery.raw(statement));
    } finally {
      this.releaseWriter?.();
      this.releaseWriter = undefined;
    }
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.releaseWriter !== undefined) return this.thread.execute('write', query);
    if (SelectQueryNode.is(query.query)) return this.thread.execute('read', query);
    const release = await this.lockWriter();
    try {
      return await this.thread.execute('write', query);
    } finally {
      release();
    }
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('The SQLite store does not stream query results.');
  }
}

