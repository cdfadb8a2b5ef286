import type { Kysely } from './kysely.js';
import { deleteConsoleEntry, listConsoleEntries, putConsoleEntry } from './console-entries.js';
import type { ChangeCounters } from './change-counters.js';
import type { Database } from './schema.js';
import type { CatalogueRepository, DiscoveredList, DiscoverySchedule, StoredModel, StoredPriceList, StoredProvider } from './store.js';
import { byBytes } from './text-order.js';

/** Console-registered providers and models; every change bumps `catalogue_version` in the same transaction (ChangeCounters). */
export class SqlCatalogue implements CatalogueRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly counters: ChangeCounters,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  providers(): Promise<StoredProvider[]> {
    return listConsoleEntries(this.db, 'console_providers', this.dialect);
  }

  async models(): Promise<StoredModel[]> {
    const rows = await this.db.selectFrom('console_models').selectAll().orderBy('created_at').orderBy(byBytes('id', this.dialect)).execute();
    return rows.map((row) => ({
      id: row.id,
      providerId: row.provider_id,
      config: JSON.parse(row.config) as Record<string, unknown>,
      createdAt: Number(row.created_at),
      updatedAt: Number(row.updated_at),
    }));
  }

  putProvider(entry: { id: string; config: object; secrets: string | null }, mode: 'create' | 'update'): Promise<boolean> {
    return putConsoleEntry(this.counters, this.db, 'console_providers', 'catalogue', entry, mode);
  }

  deleteProvider(id: string): Promise<'deleted' | 'missing' | 'in_use'> {
    return deleteConsoleEntry(this.counters, this.db, 'console_providers', 'catalogue', id, async (tx) => {
      const user = await tx.selectFrom('console_models').select('id').where('provider_id', '=', id).executeTakeFirst();
      return user === undefined ? undefined : ('in_use' as const);
    });
  }

  async putModel(entry: { id: string; providerId: string; config: object }, mode: 'create' | 'update'): Promise<boolean> {
    const now = Date.now();
    return this.counters.write(this.db, async (tx, bump) => {
      if (mode === 'create') {
        const result = await tx
          .insertInto('console_models')
          .values({ id: entry.id, provider_id: entry.providerId, config: JSON.stringify(entry.config), created_at: now, updated_at: now })
          .onConflict((oc) => oc.column('id').doNothing())
          .executeTakeFirst();
        if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
      } else {
        const result = await tx
          .updateTable('console_models')
          .set({ provider_id: entry.providerId, config: JSON.stringify(entry.config), updated_at: now })
          .where('id', '=', entry.id)
          .executeTakeFirst();
        if (result.numUpdatedRows === 0n) return false;
      }
      await bump('catalogue');
      return true;
    });
  }

  async deleteModel(id: string): Promise<boolean> {
    return this.counters.write(this.db, async (tx, bump) => {
      const result = await tx.deleteFrom('console_models').where('id', '=', id).executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await bump('catalogue');
      return true;
    });
  }

  async discovered(): Promise<DiscoveredList[]> {
    const rows = await this.db.selectFrom('discovered_models').selectAll().orderBy(byBytes('provider_id', this.dialect)).execute();
    return rows.map((row) => ({
      providerId: row.provider_id,
      models: JSON.parse(row.models) as unknown,
      listedAt: row.listed_at === null ? null : Number(row.listed_at),
      error: row.error,
      errorUrl: row.error_url,
      errorAt: row.error_at === null ? null : Number(row.error_at),
    }));
  }

  async claimDiscovery(providerId: string, claimant: string, now: number, schedule: DiscoverySchedule): Promise<boolean> {
    // A read first: most ticks find the turn not yet come, and then nothing is written.
    let row = await this.db.selectFrom('discovered_models').select(['listed_at', 'error_at', 'claimed_until']).where('provider_id', '=', providerId).executeTakeFirst();
    if (row === undefined) {
      await this.db.insertInto('discovered_models').values({ provider_id: providerId, models: '[]', listed_at: null, error: null, error_url: null, error_at: null }).onConflict((oc) => oc.column('provider_id').doNothing()).execute();
      row = { listed_at: null, error_at: null, claimed_until: 0 };
    }
    const listedAt = row.listed_at === null ? null : Number(row.listed_at);
    const errorAt = row.error_at === null ? null : Number(row.error_at);
    if (Number(row.claimed_until) > now || discoveryDueAt(listedAt, errorAt, schedule) > now) return false;
    // Taken only if no one claimed it, nor listed, since the read: a process that read before another
    // listed and let go would otherwise list again at once.
    const result = await this.db
      .updateTable('discovered_models')
      .set({ claimed_by: claimant, claimed_until: now + schedule.leaseMs })
      .where('provider_id', '=', providerId)
      .where('claimed_until', '<=', now)
      .where('listed_at', listedAt === null ? 'is' : '=', listedAt)
      .where('error_at', errorAt === null ? 'is' : '=', errorAt)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async renewDiscovery(providerId: string, claimant: string, until: number): Promise<boolean> {
    const result = await this.db.updateTable('discovered_models').set({ claimed_until: until }).where('provider_id', '=', providerId).where('claimed_by', '=', claimant).executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async releaseDiscovery(providerId: string, claimant: string): Promise<void> {
    await this.db.updateTable('discovered_models').set({ claimed_by: null, claimed_until: 0 }).where('provider_id', '=', providerId).where('claimed_by', '=', claimant).execute();
  }

  async putDiscovered(providerId: string, models: readonly object[], now: number): Promise<boolean> {
    const text = JSON.stringify(models);
    return this.counters.write(this.db, async (tx, bump) => {
      // No row: the provider's list was dropped (it stopped discovering) while it was being read.
      const row = await tx.selectFrom('discovered_models').select('models').where('provider_id', '=', providerId).executeTakeFirst();
      if (row === undefined) return false;
      const changed = row.models !== text;
      await tx.updateTable('discovered_models').set({ models: text, listed_at: now, error: null, error_url: null, error_at: null }).where('provider_id', '=', providerId).execute();
      // An unchanged list (the usual case) costs the other processes no reload.
      if (changed) await bump('catalogue');
      return changed;
    });
  }

  async discoveryFailed(providerId: string, error: string, url: string | null, now: number): Promise<void> {
    await this.db.updateTable('discovered_models').set({ error, error_url: url, error_at: now }).where('provider_id', '=', providerId).execute();
  }

  async dropDiscovered(keep: readonly string[]): Promise<boolean> {
    return this.counters.write(this.db, async (tx, bump) => {
      let query = tx.deleteFrom('discovered_models');
      if (keep.length > 0) query = query.where('provider_id', 'not in', keep);
      const gone = await query.returning('models').execute();
      const listed = gone.some((row) => row.models !== '[]');
      if (listed) await bump('catalogue');
      return listed;
    });
  }

  async priceList(): Promise<StoredPriceList | undefined> {
    const row = await this.db.selectFrom('price_list').selectAll().where('id', '=', 'imported').executeTakeFirst();
    return row && { document: row.document, importedAt: Number(row.imported_at) };
  }

  async putPriceList(document: string | null, importedAt: number): Promise<boolean> {
    // The catalogue's prices change with the list: every process reloads it.
    return this.counters.write(this.db, async (tx, bump) => {
      const removed = await tx.deleteFrom('price_list').where('id', '=', 'imported').executeTakeFirst();
      if (document !== null) await tx.insertInto('price_list').values({ id: 'imported', document, imported_at: importedAt }).execute();
      else if (removed.numDeletedRows === 0n) return false;
      await bump('catalogue');
      return true;
    });
  }

  async version(): Promise<number> {
    const row = await this.db.selectFrom('meta').select('value').where('name', '=', 'catalogue_version').executeTakeFirstOrThrow();
    return Number(row.value);
  }
}

/**
 * When a provider's next listing is due: at once if never tried; after a failure newer than the last
 * listing, `retryMs` after it; else `intervalMs` (as configured now) after the last listing.
 */
export function discoveryDueAt(listedAt: number | null, errorAt: number | null, schedule: DiscoverySchedule): number {
  if (errorAt !== null && (listedAt === null || errorAt >= listedAt)) return errorAt + schedule.retryMs;
  return listedAt === null ? 0 : listedAt + schedule.intervalMs;
}
