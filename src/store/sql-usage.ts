import type { Selectable } from 'kysely';
import { CompiledQuery, type Kysely } from './kysely.js';
import type { Database } from './schema.js';
import { addToDailyStatus, dayOf } from './sql-status.js';
import { addToUsageDaily, ROLLED_UP_COLUMNS, type RolledUpRow } from './sql-usage-daily.js';
import { countsAgainstProvider, type DailyStatusRow, type TrafficSample, type UsageRepository, type UsageRow } from './store.js';

/** Rows per INSERT: stays far below either dialect's limit on bound parameters. */
const USAGE_INSERT_CHUNK = 500;

/** The usage ledger; each batch also adds to the daily status counters and the usage roll-ups, in its transaction. */
export class SqlUsage implements UsageRepository {
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
  'unpriced', 'attempts', 'deployment', 'attempt_log', 'bytes_in', 'bytes_out',
] as const;

/** The statement's fixed parts, made once: only the tuples (and, on PostgreSQL, their numbered marks) vary with the batch. */
const LEDGER_INSERT_HEAD = `insert into "usage_ledger" (${LEDGER_COLUMNS.map((c) => `"${c}"`).join(', ')}) values `;
const SQLITE_LEDGER_TUPLE = `(${LEDGER_COLUMNS.map(() => '?').join(', ')})`;

/**
 * One multi-row INSERT written as text: the ledger takes a batch every flush, and the query
 * builder's per-value parsing was the largest part of its cost on the event loop.
 */
function ledgerInsert(dialect: 'sqlite' | 'postgres', rows: readonly ReturnType<typeof toLedgerRow>[]): CompiledQuery {
  const parameters: unknown[] = new Array(rows.length * LEDGER_COLUMNS.length);
  const tuples: string[] = [];
  let at = 0;
  for (const row of rows) {
    if (dialect === 'sqlite') {
      for (const column of LEDGER_COLUMNS) parameters[at++] = row[column];
      tuples.push(SQLITE_LEDGER_TUPLE);
      continue;
    }
    const marks: string[] = [];
    for (const column of LEDGER_COLUMNS) {
      parameters[at++] = row[column];
      marks.push(`$${at}`);
    }
    tuples.push(`(${marks.join(', ')})`);
  }
  return CompiledQuery.raw(LEDGER_INSERT_HEAD + tuples.join(', '), parameters);
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
    unpriced: row.unpriced ? 1 : 0,
    attempts: row.attempts,
    deployment: row.deployment,
    attempt_log: row.attemptLog === null ? null : JSON.stringify(row.attemptLog),
    bytes_in: row.bytesIn ?? null,
    bytes_out: row.bytesOut ?? null,
  };
}
