import type { Kysely } from './kysely.js';
import type { ChangeCounters } from './change-counters.js';
import type { Database } from './schema.js';
import type { CatalogueRepository, StoredModel, StoredPriceList, StoredProvider } from './store.js';
import { byBytes } from './text-order.js';

/** Console-registered providers and models; every change bumps `catalogue_version` in the same transaction (ChangeCounters). */
export class SqlCatalogue implements CatalogueRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly counters: ChangeCounters,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  async providers(): Promise<StoredProvider[]> {
    const rows = await this.db.selectFrom('console_providers').selectAll().orderBy('created_at').orderBy(byBytes('id', this.dialect)).execute();
    return rows.map((row) => ({
      id: row.id,
      config: JSON.parse(row.config) as Record<string, unknown>,
      secrets: row.secrets,
      createdAt: Number(row.created_at),
      updatedAt: Number(row.updated_at),
    }));
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

  async putProvider(entry: { id: string; config: object; secrets: string | null }, mode: 'create' | 'update'): Promise<boolean> {
    const now = Date.now();
    return this.counters.write(this.db, async (tx, bump) => {
      if (mode === 'create') {
        const result = await tx
          .insertInto('console_providers')
          .values({ id: entry.id, config: JSON.stringify(entry.config), secrets: entry.secrets, created_at: now, updated_at: now })
          .onConflict((oc) => oc.column('id').doNothing())
          .executeTakeFirst();
        if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
      } else {
        const result = await tx
          .updateTable('console_providers')
          .set({ config: JSON.stringify(entry.config), secrets: entry.secrets, updated_at: now })
          .where('id', '=', entry.id)
          .executeTakeFirst();
        if (result.numUpdatedRows === 0n) return false;
      }
      await bump('catalogue');
      return true;
    });
  }

  async deleteProvider(id: string): Promise<'deleted' | 'missing' | 'in_use'> {
    return this.counters.write(this.db, async (tx, bump) => {
      const user = await tx.selectFrom('console_models').select('id').where('provider_id', '=', id).executeTakeFirst();
      if (user !== undefined) return 'in_use';
      const result = await tx.deleteFrom('console_providers').where('id', '=', id).executeTakeFirst();
      if (result.numDeletedRows === 0n) return 'missing';
      await bump('catalogue');
      return 'deleted';
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
