import { sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';

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
  };
  return { getMigrations: async () => migrations };
}
