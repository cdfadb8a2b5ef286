import type { Kysely } from './kysely.js';
import type { ChangeCounters } from './change-counters.js';
import type { Database } from './schema.js';
import type { McpServersRepository, StoredMcpServer } from './store.js';
import { byBytes } from './text-order.js';

/**
 * Upstream MCP servers registered in the console. Every change bumps `catalogue_version` (and so
 * notifies the change feed's `catalogue` topic) in its own transaction: the servers a gateway offers
 * are part of what it serves, and every process and replica reloads them with the catalogue's notice.
 */
export class SqlMcpServers implements McpServersRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly counters: ChangeCounters,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  async list(): Promise<StoredMcpServer[]> {
    const rows = await this.db.selectFrom('console_mcp_servers').selectAll().orderBy('created_at').orderBy(byBytes('id', this.dialect)).execute();
    return rows.map((row) => ({
      id: row.id,
      config: JSON.parse(row.config) as Record<string, unknown>,
      secrets: row.secrets,
      createdAt: Number(row.created_at),
      updatedAt: Number(row.updated_at),
    }));
  }

  async put(entry: { id: string; config: object; secrets: string | null }, mode: 'create' | 'update'): Promise<boolean> {
    const now = Date.now();
    return this.counters.write(this.db, async (tx, bump) => {
      if (mode === 'create') {
        const result = await tx
          .insertInto('console_mcp_servers')
          .values({ id: entry.id, config: JSON.stringify(entry.config), secrets: entry.secrets, created_at: now, updated_at: now })
          .onConflict((oc) => oc.column('id').doNothing())
          .executeTakeFirst();
        if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 0) return false;
      } else {
        const result = await tx
          .updateTable('console_mcp_servers')
          .set({ config: JSON.stringify(entry.config), secrets: entry.secrets, updated_at: now })
          .where('id', '=', entry.id)
          .executeTakeFirst();
        if (result.numUpdatedRows === 0n) return false;
      }
      await bump('catalogue');
      return true;
    });
  }

  async delete(id: string): Promise<boolean> {
    return this.counters.write(this.db, async (tx, bump) => {
      const result = await tx.deleteFrom('console_mcp_servers').where('id', '=', id).executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await bump('catalogue');
      return true;
    });
  }
}
