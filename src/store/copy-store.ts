import type { Insertable, Selectable } from 'kysely';
import { UserError } from '../core/user-error.js';
import { sql, type Kysely } from './kysely.js';
import type { Database } from './schema.js';
import { addToUsageDaily, ROLLED_UP_COLUMNS } from './sql-usage-daily.js';

/** What one table's copy did: rows written to the target, and rows the target had already. */
export interface TableCopy {
  readonly table: string;
  readonly copied: number;
  readonly present: number;
}

export interface CopyOptions {
  /** Rows read and written at a time, at most MAX_COPY_BATCH. */
  readonly batch?: number;
  /** Called after each batch of a table, with the rows done so far. */
  readonly progress?: (table: string, done: number) => void;
}

const DEFAULT_BATCH = 1000;
/** A ledger row binds two dozen parameters: 2000 rows stay well below PostgreSQL's 65,535 per statement. */
export const MAX_COPY_BATCH = 2000;
/** The meta counters that caches poll, and the tables whose changes each one announces. */
const COUNTERS = { keys_version: ['accounts', 'api_keys'], catalogue_version: ['console_providers', 'console_models', 'price_list', 'console_mcp_servers'] } as const;

/**
 * Copies one store's contents into another (an embedded deployment's SQLite into PostgreSQL), a
 * batch at a time, so that a ledger of millions of rows is never held in memory. Safe to run again:
 * every row is matched by its key (ids; the ledger by entry id, a row without one getting
 * `copied.<source id>`; a probe by time, provider and model) and what the target has is kept as
 * it is. Ledger and probe rows get the target's own ids. The daily usage roll-ups are not copied
 * but added to from the ledger rows the target takes. Console sessions and sign-in throttling
 * are not copied: people sign in again.
 */
export async function copyStore(source: Kysely<Database>, target: Kysely<Database>, options: CopyOptions = {}): Promise<TableCopy[]> {
  const batch = Math.min(options.batch ?? DEFAULT_BATCH, MAX_COPY_BATCH);
  const progress = options.progress ?? (() => {});
  const results: TableCopy[] = [];

  const byId = async <T extends 'accounts' | 'api_keys' | 'console_providers' | 'console_models' | 'console_mcp_servers' | 'price_list' | 'stored_responses' | 'stored_response_items'>(
    table: T,
    check?: (rows: Selectable<Database[T]>[], inserted: Set<string>) => Promise<void>,
  ) => {
    let copied = 0;
    let present = 0;
    let after: string | undefined;
    for (;;) {
      // Untyped here: Kysely cannot follow a table name that is a type parameter.
      let query = (source as Kysely<any>).selectFrom(table).selectAll().orderBy('id').limit(batch);
      if (after !== undefined) query = query.where('id', '>', after);
      const rows = (await query.execute()) as Selectable<Database[T]>[];
      if (rows.length === 0) break;
      const inserted: { id: string }[] = await (target as Kysely<any>)
        .insertInto(table)
        .values(rows)
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .execute();
      const ids = new Set(inserted.map((row) => row.id));
      await check?.(rows, ids);
      copied += ids.size;
      present += rows.length - ids.size;
      after = (rows.at(-1) as { id: string }).id;
      progress(table, copied + present);
    }
    results.push({ table, copied, present });
  };

  await byId('accounts', async (rows, inserted) => {
    // A name the target gives to another account would leave this one's keys without their owner.
    const skipped = rows.filter((row) => !inserted.has(row.id));
    if (skipped.length === 0) return;
    const there = await target.selectFrom('accounts').select(['id', 'name']).where('name', 'in', skipped.map((row) => row.name)).execute();
    const clash = skipped.find((row) => there.some((other) => other.name === row.name && other.id !== row.id));
    if (clash !== undefined) throw new UserError(`the target already has an account named '${clash.name}' under another id; nothing after it was copied.`);
  });
  await byId('api_keys');
  await byId('console_providers');
  await byId('console_models');
  await byId('console_mcp_servers');
  await byId('price_list');
  await byId('stored_responses');
  await byId('stored_response_items');
  results.push(await copyDailyStatus(source, target, batch, progress));
  results.push(await copyProbes(source, target, batch, progress));
  results.push(await copyLedger(source, target, batch, progress));
  await copyCounters(source, target, results);
  return results;
}

async function copyDailyStatus(source: Kysely<Database>, target: Kysely<Database>, batch: number, progress: (table: string, done: number) => void): Promise<TableCopy> {
  let copied = 0;
  let present = 0;
  let after: Selectable<Database['status_daily']> | undefined;
  for (;;) {
    let query = source.selectFrom('status_daily').selectAll().orderBy('day').orderBy('provider_id').orderBy('model').limit(batch);
    if (after !== undefined) query = query.where(sql<boolean>`(day, provider_id, model) > (${after.day}, ${after.provider_id}, ${after.model})`);
    const rows = await query.execute();
    if (rows.length === 0) break;
    // A day the target counted already keeps its own counters, so that a second copy adds nothing.
    const inserted = await target
      .insertInto('status_daily')
      .values(rows)
      .onConflict((oc) => oc.columns(['day', 'provider_id', 'model']).doNothing())
      .returning('day')
      .execute();
    copied += inserted.length;
    present += rows.length - inserted.length;
    after = rows.at(-1);
    progress('status_daily', copied + present);
  }
  return { table: 'status_daily', copied, present };
}

async function copyProbes(source: Kysely<Database>, target: Kysely<Database>, batch: number, progress: (table: string, done: number) => void): Promise<TableCopy> {
  let copied = 0;
  let present = 0;
  let after: number | undefined;
  for (;;) {
    let query = source.selectFrom('status_probes').selectAll().orderBy('id').limit(batch);
    if (after !== undefined) query = query.where('id', '>', after);
    const rows = await query.execute();
    if (rows.length === 0) break;
    // Probe rows have no key of their own: one at the same time, provider and model is the same probe.
    const ats = rows.map((row) => row.at);
    const there = await target
      .selectFrom('status_probes')
      .select(['at', 'provider_id', 'model'])
      .where('at', '>=', Math.min(...ats))
      .where('at', '<=', Math.max(...ats))
      .execute();
    const seen = new Set(there.map((row) => `${row.at}\u0000${row.provider_id}\u0000${row.model}`));
    const fresh = rows.filter((row) => !seen.has(`${row.at}\u0000${row.provider_id}\u0000${row.model}`)).map(({ id: _id, ...row }) => row);
    if (fresh.length > 0) await target.insertInto('status_probes').values(fresh).execute();
    copied += fresh.length;
    present += rows.length - fresh.length;
    after = rows.at(-1)!.id;
    progress('status_probes', copied + present);
  }
  return { table: 'status_probes', copied, present };
}

async function copyLedger(source: Kysely<Database>, target: Kysely<Database>, batch: number, progress: (table: string, done: number) => void): Promise<TableCopy> {
  let copied = 0;
  let present = 0;
  let after: number | undefined;
  for (;;) {
    let query = source.selectFrom('usage_ledger').selectAll().orderBy('id').limit(batch);
    if (after !== undefined) query = query.where('id', '>', after);
    const rows = await query.execute();
    if (rows.length === 0) break;
    // Rows from before entry ids (migration 0003) get one from their source id, so a second copy finds them.
    const values: Insertable<Database['usage_ledger']>[] = rows.map(({ id, ...row }) => ({ ...row, entry_id: row.entry_id ?? `copied.${id}` }));
    // Not through the ledger's append: the status counters are copied as they are, not counted
    // again. The usage roll-ups are the target's own: what this batch adds to its ledger is added
    // to them, in the same transaction, so they stay equal to its ledger however often this runs.
    const inserted = await target.transaction().execute(async (tx) => {
      const landed = await tx
        .insertInto('usage_ledger')
        .values(values)
        .onConflict((oc) => oc.column('entry_id').doNothing())
        .returning(ROLLED_UP_COLUMNS)
        .execute();
      await addToUsageDaily(tx, landed);
      return landed;
    });
    copied += inserted.length;
    present += rows.length - inserted.length;
    after = rows.at(-1)!.id;
    progress('usage_ledger', copied + present);
  }
  return { table: 'usage_ledger', copied, present };
}

/**
 * Each counter becomes the larger of the two, and one more when rows it announces were copied, so
 * that gateways already running on the target reload their caches.
 */
async function copyCounters(source: Kysely<Database>, target: Kysely<Database>, results: readonly TableCopy[]): Promise<void> {
  for (const [name, tables] of Object.entries(COUNTERS)) {
    const from = await source.selectFrom('meta').select('value').where('name', '=', name).executeTakeFirst();
    const to = await target.selectFrom('meta').select('value').where('name', '=', name).executeTakeFirst();
    const changed = results.some((result) => (tables as readonly string[]).includes(result.table) && result.copied > 0);
    const value = Math.max(Number(from?.value ?? 0), Number(to?.value ?? 0)) + (changed ? 1 : 0);
    if (value !== Number(to?.value ?? 0)) await target.updateTable('meta').set({ value }).where('name', '=', name).execute();
  }
}
