import type { BumpCounter, ChangeCounters } from './change-counters.js';
import type { ChangeTopic } from '../changes/change-feed.js';
import type { Kysely } from './kysely.js';
import type { Database } from './schema.js';
import { byBytes } from './text-order.js';

/** The console's tables of sealed entries (an id, its plain fields as JSON, its secrets sealed). */
type ConsoleEntryTable = 'console_providers' | 'console_mcp_servers';

/** A console entry as stored: its plain fields parsed, its secrets still sealed. */
export interface StoredConsoleEntry {
  readonly id: string;
  readonly config: Record<string, unknown>;
  readonly secrets: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Every entry of a console table, oldest first (ties by id, byte order on both stores). */
export async function listConsoleEntries(db: Kysely<Database>, table: ConsoleEntryTable, dialect: 'sqlite' | 'postgres'): Promise<StoredConsoleEntry[]> {
  const rows = await db.selectFrom(table).selectAll().orderBy('created_at').orderBy(byBytes('id', dialect)).execute();
  return rows.map((row) => ({
    id: row.id,
    config: JSON.parse(row.config) as Record<string, unknown>,
    secrets: row.secrets,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }));
}

/**
 * Writes one console entry (a provider, an MCP server) and bumps `topic`'s counter in the same
 * transaction. `create` inserts and never overwrites: an id taken, or any other unique index
 * (an id differing only in case) refusing it, is `false`, as is an `update` of a missing id.
 */
export function putConsoleEntry(
  counters: ChangeCounters,
  db: Kysely<Database>,
  table: ConsoleEntryTable,
  topic: ChangeTopic,
  entry: { id: string; config: object; secrets: string | null },
  mode: 'create' | 'update',
): Promise<boolean> {
  const now = Date.now();
  return counters.write(db, async (tx, bump) => {
    if (mode === 'create') {
      // No conflict target: whichever unique index refuses the row (its id, its id folded), nothing is written.
      const result = await tx
        .insertInto(table)
        .values({ id: entry.id, config: JSON.stringify(entry.config), secrets: entry.secrets, created_at: now, updated_at: now })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
    } else {
      const result = await tx.updateTable(table).set({ config: JSON.stringify(entry.config), secrets: entry.secrets, updated_at: now }).where('id', '=', entry.id).executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
    }
    await bump(topic);
    return true;
  });
}

/**
 * Deletes one console entry and bumps `topic`'s counter in the same transaction; `blocked` (run in
 * that transaction first) may keep it, with its own answer.
 */
export function deleteConsoleEntry<Blocked extends string>(
  counters: ChangeCounters,
  db: Kysely<Database>,
  table: ConsoleEntryTable,
  topic: ChangeTopic,
  id: string,
  blocked?: (tx: Kysely<Database>) => Promise<Blocked | undefined>,
): Promise<'deleted' | 'missing' | Blocked> {
  return counters.write(db, async (tx, bump: BumpCounter) => {
    const refusal = blocked === undefined ? undefined : await blocked(tx);
    if (refusal !== undefined) return refusal;
    const result = await tx.deleteFrom(table).where('id', '=', id).executeTakeFirst();
    if (result.numDeletedRows === 0n) return 'missing';
    await bump(topic);
    return 'deleted';
  });
}
