import type { Selectable } from 'kysely';
import { sql, type Kysely } from './kysely.js';
import type { Database } from './schema.js';
import { DAY_MS, dayOf } from './sql-status.js';
import type { UsageDailyRepository, UsageDimension, UsageFilter, UsageGroup } from './store.js';
import { byBytes, compareText } from './text-order.js';
import { rolledUpName, ROLLED_UP_NAME_SQL } from '../core/tool-calls.js';

/** A request counts as failed from this status up: refusals, the caller's mistakes, upstream failures, callers who left (499). */
const FAILED_FROM_STATUS = 400;
/** Rows per upsert: nine parameters each, far below either dialect's limit. */
const UPSERT_CHUNK = 500;

/** The ledger columns the roll-up adds up, as stored (and as an insert's `returning` gives them back). */
export const ROLLED_UP_COLUMNS = ['at', 'account_id', 'key_id', 'operation', 'model', 'status', 'prompt_tokens', 'completion_tokens', 'cost_usd', 'unpriced'] as const;
export type RolledUpRow = Pick<Selectable<Database['usage_ledger']>, (typeof ROLLED_UP_COLUMNS)[number]>;

type DailyRow = Selectable<Database['usage_daily']>;

/**
 * Adds ledger rows to the daily roll-ups, inside the caller's transaction: the one that inserted
 * exactly these rows. Callers pass only the rows that landed (an insert that skips rows already
 * stored passes what its `returning` gave back), so a row is never counted twice.
 */
export async function addToUsageDaily(db: Kysely<Database>, rows: readonly RolledUpRow[]): Promise<void> {
  const groups = new Map<string, { -readonly [K in keyof DailyRow]: DailyRow[K] }>();
  for (const row of rows) {
    const day = dayOf(Number(row.at));
    // A tool call goes under its own name, apart from any model of the same name (core/tool-calls.ts).
    const model = rolledUpName(row.operation, row.model);
    const id = `${day}\u0000${row.account_id}\u0000${row.key_id}\u0000${model}`;
    let group = groups.get(id);
    if (group === undefined) {
      group = { day, account_id: row.account_id, key_id: row.key_id, model, requests: 0, failed: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0, unpriced: 0 };
      groups.set(id, group);
    }
    group.requests++;
    if (row.status >= FAILED_FROM_STATUS) group.failed++;
    group.input_tokens += Number(row.prompt_tokens);
    group.output_tokens += Number(row.completion_tokens);
    group.cost_usd += Number(row.cost_usd);
    group.unpriced += Number(row.unpriced);
  }
  // In one order for every writer, as addToDailyStatus does: replicas upserting the same rows wait for each other, never deadlock.
  const ordered = [...groups.values()].sort(
    (a, b) => a.day - b.day || compareText(a.account_id, b.account_id) || compareText(a.key_id, b.key_id) || compareText(a.model, b.model),
  );
  for (let start = 0; start < ordered.length; start += UPSERT_CHUNK) {
    await db
      .insertInto('usage_daily')
      .values(ordered.slice(start, start + UPSERT_CHUNK))
      .onConflict((oc) =>
        oc.columns(['day', 'account_id', 'key_id', 'model']).doUpdateSet({
          requests: sql`usage_daily.requests + excluded.requests`,
          failed: sql`usage_daily.failed + excluded.failed`,
          input_tokens: sql`usage_daily.input_tokens + excluded.input_tokens`,
          output_tokens: sql`usage_daily.output_tokens + excluded.output_tokens`,
          cost_usd: sql`usage_daily.cost_usd + excluded.cost_usd`,
          unpriced: sql`usage_daily.unpriced + excluded.unpriced`,
        }),
      )
      .execute();
  }
}

/**
 * Replaces the roll-ups with the whole ledger added up, in SQL: the backfill of migration 0008, and
 * how the benchmark fills a store it wrote the ledger of directly. The same rules as addToUsageDaily,
 * over migration 0008's columns (`unpriced` came later: a ledger written before it has none).
 */
export async function rollUpWholeLedger(db: Kysely<any>): Promise<void> {
  const rolledUpModel = sql`case when operation = ${sql.lit(ROLLED_UP_NAME_SQL.operation)} then ${sql.lit(ROLLED_UP_NAME_SQL.prefix)} || model else model end`;
  await sql`delete from usage_daily`.execute(db);
  await sql`insert into usage_daily (day, account_id, key_id, model, requests, failed, input_tokens, output_tokens, cost_usd)
    select cast(at / ${sql.lit(DAY_MS)} as integer), account_id, key_id, ${rolledUpModel}, count(*),
      sum(case when status >= ${sql.lit(FAILED_FROM_STATUS)} then 1 else 0 end), sum(prompt_tokens), sum(completion_tokens), sum(cost_usd)
    from usage_ledger
    group by cast(at / ${sql.lit(DAY_MS)} as integer), account_id, key_id, ${rolledUpModel}`.execute(db);
}

const COLUMNS: Record<UsageDimension, readonly ('day' | 'account_id' | 'key_id' | 'model')[]> = {
  day: ['day'],
  account: ['account_id'],
  // A key's group carries its account, for the account's name beside the key's.
  key: ['account_id', 'key_id'],
  model: ['model'],
};

interface SummaryRow {
  day?: number;
  account_id?: string;
  key_id?: string;
  model?: string;
  account_name?: string | null;
  key_name?: string | null;
  requests: number | null;
  failed: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  unpriced: number | null;
}

/** Reports read from the roll-ups only: a few thousand rows for a range of days, however long the ledger. */
export class SqlUsageDaily implements UsageDailyRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  async summary(filter: UsageFilter, by: readonly UsageDimension[], options: { top?: number } = {}): Promise<UsageGroup[]> {
    if (filter.keyIds?.length === 0) return [];
    const columns = [...new Set(by.flatMap((dimension) => COLUMNS[dimension]))];
    let rows = this.db.selectFrom('usage_daily').where('day', '>=', filter.fromDay).where('day', '<=', filter.toDay);
    if (filter.accountId !== undefined) rows = rows.where('account_id', '=', filter.accountId);
    if (filter.keyId !== undefined) rows = rows.where('key_id', '=', filter.keyId);
    if (filter.keyIds !== undefined) rows = rows.where('key_id', 'in', filter.keyIds);
    let grouped = rows.select(columns).select((eb) => [
      eb.fn.sum<number>('requests').as('requests'),
      eb.fn.sum<number>('failed').as('failed'),
      eb.fn.sum<number>('input_tokens').as('input_tokens'),
      eb.fn.sum<number>('output_tokens').as('output_tokens'),
      eb.fn.sum<number>('cost_usd').as('cost_usd'),
      eb.fn.sum<number>('unpriced').as('unpriced'),
    ]);
    if (columns.length > 0) grouped = grouped.groupBy(columns);

    // Names are joined to the groups, not to every roll-up row. Untyped: Kysely cannot follow a
    // subquery whose columns depend on `by`.
    let query = (this.db as Kysely<any>).selectFrom(grouped.as('u')).selectAll('u');
    if (columns.includes('account_id')) query = query.leftJoin('accounts', 'accounts.id', 'u.account_id').select('accounts.name as account_name');
    if (columns.includes('key_id')) query = query.leftJoin('api_keys', 'api_keys.id', 'u.key_id').select('api_keys.name as key_name');
    if (options.top !== undefined) query = query.orderBy('u.cost_usd', 'desc').orderBy('u.requests', 'desc');
    for (const column of columns) query = query.orderBy(column === 'day' ? sql.ref('u.day') : byBytes(`u.${column}`, this.dialect));
    if (options.top !== undefined) query = query.limit(options.top);
    return ((await query.execute()) as SummaryRow[]).map(toGroup);
  }
}

function toGroup(row: SummaryRow): UsageGroup {
  // Assigned one by one: a CSV maps tens of thousands of groups, and object spreads cost 20 times more.
  const group: { -readonly [K in keyof UsageGroup]: UsageGroup[K] } = {
    requests: Number(row.requests ?? 0),
    failed: Number(row.failed ?? 0),
    inputTokens: Number(row.input_tokens ?? 0),
    outputTokens: Number(row.output_tokens ?? 0),
    costUsd: Number(row.cost_usd ?? 0),
    unpricedRequests: Number(row.unpriced ?? 0),
  };
  if (row.day !== undefined) group.day = Number(row.day);
  if (row.account_id !== undefined) {
    group.accountId = row.account_id;
    group.accountName = row.account_name ?? undefined;
  }
  if (row.key_id !== undefined) {
    group.keyId = row.key_id;
    group.keyName = row.key_name ?? undefined;
  }
  if (row.model !== undefined) group.model = row.model;
  return group;
}
