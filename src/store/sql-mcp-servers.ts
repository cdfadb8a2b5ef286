import { deleteConsoleEntry, listConsoleEntries, putConsoleEntry } from './console-entries.js';
import type { Kysely } from './kysely.js';
import type { ChangeCounters } from './change-counters.js';
import type { Database } from './schema.js';
import type { McpServersRepository, StoredMcpServer } from './store.js';

/**
 * Upstream MCP servers registered in the console. Every change bumps `mcp_servers_version` (and so
 * notifies the change feed's `mcp` topic) in its own transaction: every process and replica reloads
 * its MCP server list on that notice, and the model catalogue (its own counter) is left alone.
 * Ids are unique without case (an index on lower(id)): two creates racing with `GitHub` and
 * `github` cannot both succeed.
 */
export class SqlMcpServers implements McpServersRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly counters: ChangeCounters,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  list(): Promise<StoredMcpServer[]> {
    return listConsoleEntries(this.db, 'console_mcp_servers', this.dialect);
  }

  put(entry: { id: string; config: object; secrets: string | null }, mode: 'create' | 'update'): Promise<boolean> {
    return putConsoleEntry(this.counters, this.db, 'console_mcp_servers', 'mcp', entry, mode);
  }

  async delete(id: string): Promise<boolean> {
    return (await deleteConsoleEntry(this.counters, this.db, 'console_mcp_servers', 'mcp', id)) === 'deleted';
  }

  async version(): Promise<number> {
    const row = await this.db.selectFrom('meta').select('value').where('name', '=', 'mcp_servers_version').executeTakeFirstOrThrow();
    return Number(row.value);
  }
}
