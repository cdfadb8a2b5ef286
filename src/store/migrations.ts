import type { Migration, MigrationProvider } from 'kysely/migration';
import { sql, type Kysely } from './kysely.js';
import { rollUpWholeLedger } from './sql-usage-daily.js';

/**
 * Schema migrations, in order. Written with Kysely's schema builder so the same steps run on SQLite
 * and PostgreSQL; an identity column is the one place the dialects differ.
 */
export function migrationsFor(dialect: 'sqlite' | 'postgres'): MigrationProvider {
  const migrations: Record<string, Migration> = {
    '0001_accounts_keys_ledger': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('meta')
          .addColumn('name', 'text', (c) => c.primaryKey())
          .addColumn('value', 'bigint', (c) => c.notNull())
          .execute();
        await db.insertInto('meta').values({ name: 'keys_version', value: 0 }).execute();

        await db.schema
          .createTable('accounts')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .execute();

        await db.schema
          .createTable('api_keys')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
          .addColumn('secret_prefix', 'text', (c) => c.notNull())
          .addColumn('secret_last_four', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('models', 'text')
          .addColumn('expires_at', 'bigint')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .addColumn('last_used_at', 'bigint')
          .execute();
        await db.schema.createIndex('api_keys_account').on('api_keys').column('account_id').execute();

        await db.schema
          .createTable('usage_ledger')
          .addColumn('id', dialect === 'postgres' ? sql`bigint generated always as identity` : 'integer', (c) =>
            c.primaryKey(),
          )
          .addColumn('at', 'bigint', (c) => c.notNull())
          .addColumn('request_id', 'text', (c) => c.notNull())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('operation', 'text', (c) => c.notNull())
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('provider_id', 'text')
          .addColumn('status', 'integer', (c) => c.notNull())
          .addColumn('error_kind', 'text')
          .addColumn('stream', 'integer', (c) => c.notNull())
          .addColumn('prompt_tokens', 'integer', (c) => c.notNull())
          .addColumn('completion_tokens', 'integer', (c) => c.notNull())
          .addColumn('tokens_counted', 'integer', (c) => c.notNull())
          .addColumn('latency_ms', 'double precision', (c) => c.notNull())
          .addColumn('ttfb_ms', 'double precision')
          .addColumn('cost_usd', 'double precision', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('usage_ledger_key_at').on('usage_ledger').columns(['key_id', 'at']).execute();
        await db.schema.createIndex('usage_ledger_at').on('usage_ledger').column('at').execute();
      },
    },
    '0002_console': {
      async up(db: Kysely<any>) {
        // SQLite adds one column per ALTER TABLE.
        await db.schema.alterTable('accounts').addColumn('password_hash', 'text').execute();
        await db.schema.alterTable('accounts').addColumn('is_admin', 'integer', (c) => c.notNull().defaultTo(0)).execute();

        await db.schema
          .createTable('console_sessions')
          .addColumn('token_hash', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('console_sessions_account').on('console_sessions').column('account_id').execute();

        await db.schema
          .createTable('login_throttle')
          .addColumn('subject', 'text', (c) => c.primaryKey())
          .addColumn('failures', 'integer', (c) => c.notNull())
          .addColumn('last_failure_at', 'bigint', (c) => c.notNull())
          .addColumn('blocked_until', 'bigint', (c) => c.notNull())
          .execute();

        await db.insertInto('meta').values({ name: 'catalogue_version', value: 0 }).execute();
        await db.schema
          .createTable('console_providers')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('config', 'text', (c) => c.notNull())
          .addColumn('secrets', 'text')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('console_models')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('provider_id', 'text', (c) => c.notNull())
          .addColumn('config', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .execute();

        await db.schema
          .createTable('status_daily')
          .addColumn('day', 'integer', (c) => c.notNull())
          .addColumn('provider_id', 'text', (c) => c.notNull())
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('requests', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('probes', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('probe_failures', 'integer', (c) => c.notNull().defaultTo(0))
          .addPrimaryKeyConstraint('status_daily_pk', ['day', 'provider_id', 'model'])
          .execute();
        await db.schema
          .createTable('status_probes')
          .addColumn('id', dialect === 'postgres' ? sql`bigint generated always as identity` : 'integer', (c) => c.primaryKey())
          .addColumn('at', 'bigint', (c) => c.notNull())
          .addColumn('provider_id', 'text', (c) => c.notNull())
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('ok', 'integer', (c) => c.notNull())
          .addColumn('latency_ms', 'double precision', (c) => c.notNull())
          .addColumn('error_kind', 'text')
          .execute();
        await db.schema.createIndex('status_probes_at').on('status_probes').column('at').execute();
      },
    },
    '0003_ledger_entry_ids': {
      async up(db: Kysely<any>) {
        // Lets a journal be imported again without storing a row twice; older rows have none.
        await db.schema.alterTable('usage_ledger').addColumn('entry_id', 'text').execute();
        await db.schema.createIndex('usage_ledger_entry_id').unique().on('usage_ledger').column('entry_id').execute();
      },
    },
    '0004_ledger_token_details': {
      async up(db: Kysely<any>) {
        // SQLite adds one column per ALTER TABLE.
        for (const column of ['cached_input_tokens', 'cache_write_tokens', 'reasoning_tokens']) {
          await db.schema.alterTable('usage_ledger').addColumn(column, 'integer', (c) => c.notNull().defaultTo(0)).execute();
        }
      },
    },
    '0005_stored_responses': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('stored_responses')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('previous_response_id', 'text')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('input_items', 'text', (c) => c.notNull())
          .addColumn('response', 'text', (c) => c.notNull())
          .addColumn('input_tokens', 'integer', (c) => c.notNull())
          .addColumn('output_tokens', 'integer', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('stored_responses_expires_at').on('stored_responses').column('expires_at').execute();
        await db.schema
          .createTable('stored_response_items')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('response_id', 'text', (c) => c.notNull())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('item', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('stored_response_items_response').on('stored_response_items').column('response_id').execute();
        await db.schema.createIndex('stored_response_items_expires_at').on('stored_response_items').column('expires_at').execute();
      },
    },
    '0006_ledger_attempts': {
      async up(db: Kysely<any>) {
        // Rows from before routing made one attempt each.
        await db.schema.alterTable('usage_ledger').addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(1)).execute();
        await db.schema.alterTable('usage_ledger').addColumn('deployment', 'text').execute();
        await db.schema.alterTable('usage_ledger').addColumn('attempt_log', 'text').execute();
      },
    },
    '0007_limits': {
      async up(db: Kysely<any>) {
        // JSON (see core/key-limits.ts); null: no limits.
        await db.schema.alterTable('api_keys').addColumn('limits', 'text').execute();
        await db.schema.alterTable('accounts').addColumn('limits', 'text').execute();
        // An account's budget is seeded from its spend in the period.
        await db.schema.createIndex('usage_ledger_account_at').on('usage_ledger').columns(['account_id', 'at']).execute();
      },
    },
    '0008_usage_daily': {
      async up(db: Kysely<any>) {
        // Reports read a range of days: on SQLite the table is kept in key order (no rowid), so
        // such a range is one sequential read.
        await db.schema
          .createTable('usage_daily')
          .addColumn('day', 'integer', (c) => c.notNull())
          .addColumn('account_id', 'text', (c) => c.notNull())
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('requests', 'bigint', (c) => c.notNull())
          .addColumn('failed', 'bigint', (c) => c.notNull())
          .addColumn('input_tokens', 'bigint', (c) => c.notNull())
          .addColumn('output_tokens', 'bigint', (c) => c.notNull())
          .addColumn('cost_usd', 'double precision', (c) => c.notNull())
          .addPrimaryKeyConstraint('usage_daily_pk', ['day', 'account_id', 'key_id', 'model'])
          .$call((table) => (dialect === 'sqlite' ? table.modifyEnd(sql`without rowid`) : table))
          .execute();
        await db.schema.createIndex('usage_daily_account_day').on('usage_daily').columns(['account_id', 'day']).execute();
        // One key's days (`sluice usage --key`, the page's top keys day by day) without scanning every key's.
        await db.schema.createIndex('usage_daily_key_day').on('usage_daily').columns(['key_id', 'day']).execute();
        await rollUpWholeLedger(db);
      },
    },
    '0009_console_accounts': {
      async up(db: Kysely<any>) {
        // A disabled account cannot sign in, and its keys are refused.
        await db.schema.alterTable('accounts').addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0)).execute();
        // Sessions also end after a time without activity; older sessions were last seen when made.
        await db.schema.alterTable('console_sessions').addColumn('last_seen_at', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
        await db.updateTable('console_sessions').set({ last_seen_at: sql`created_at` }).execute();
        // One-time sign-in links: only a SHA-256 of the token is kept.
        await db.schema
          .createTable('sign_in_links')
          .addColumn('token_hash', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('used_at', 'bigint')
          .execute();
        await db.schema.createIndex('sign_in_links_account').on('sign_in_links').column('account_id').execute();
      },
    },
    '0010_discovered_models': {
      async up(db: Kysely<any>) {
        // One row per discovering provider: its list replaced whole, so a reader never sees half of one.
        await db.schema
          .createTable('discovered_models')
          .addColumn('provider_id', 'text', (c) => c.primaryKey())
          .addColumn('models', 'text', (c) => c.notNull())
          .addColumn('listed_at', 'bigint')
          .addColumn('next_at', 'bigint', (c) => c.notNull())
          .addColumn('error', 'text')
          .addColumn('error_at', 'bigint')
          .execute();
      },
    },
    '0011_price_list': {
      async up(db: Kysely<any>) {
        // The imported price list (`sluice prices import`): at most one row, of id 'imported'.
        await db.schema
          .createTable('price_list')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('document', 'text', (c) => c.notNull())
          .addColumn('imported_at', 'bigint', (c) => c.notNull())
          .execute();
      },
    },
    '0012_discovery_lease': {
      async up(db: Kysely<any>) {
        // The claim of a listing becomes a short lease of its own; the schedule is read from the last
        // listing (or failure) and the interval configured now, so `next_at` goes.
        await db.schema.alterTable('discovered_models').addColumn('claimed_by', 'text').execute();
        await db.schema.alterTable('discovered_models').addColumn('claimed_until', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
        await db.schema.alterTable('discovered_models').dropColumn('next_at').execute();
      },
    },
    '0013_unpriced': {
      async up(db: Kysely<any>) {
        // A request to a model without a price costs $0 as a free one does: the flag tells them apart.
        // Rows from before cannot be told, and stay priced.
        await db.schema.alterTable('usage_ledger').addColumn('unpriced', 'integer', (c) => c.notNull().defaultTo(0)).execute();
        await db.schema.alterTable('usage_daily').addColumn('unpriced', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
      },
    },
    '0014_discovery_error_url': {
      async up(db: Kysely<any>) {
        // The address a failed listing requested (credentials masked), shown with its error.
        await db.schema.alterTable('discovered_models').addColumn('error_url', 'text').execute();
      },
    },
    '0015_mcp': {
      async up(db: Kysely<any>) {
        // A tool call's row (operation `mcp.tools/call`) records the bytes of its arguments and of its result.
        await db.schema.alterTable('usage_ledger').addColumn('bytes_in', 'bigint').execute();
        await db.schema.alterTable('usage_ledger').addColumn('bytes_out', 'bigint').execute();
        // Upstream MCP servers registered in the console (HTTP ones only): their fields as JSON, their headers sealed.
        await db.schema
          .createTable('console_mcp_servers')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('config', 'text', (c) => c.notNull())
          .addColumn('secrets', 'text')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .execute();
        // Ids are one without case (`/mcp/GitHub` and `github__…` name one server): two racing creates cannot both win.
        await sql`CREATE UNIQUE INDEX console_mcp_servers_id_folded ON console_mcp_servers (lower(id))`.execute(db);
        // Their own change counter: an MCP server edit does not rebuild the model catalogue, nor the reverse.
        await db.insertInto('meta').values({ name: 'mcp_servers_version', value: 0 }).execute();
      },
    },
  };
  return { getMigrations: async () => migrations };
}
