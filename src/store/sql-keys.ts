import type { Selectable, Updateable } from 'kysely';
import { parseStoredLimits, storedLimits, type Limits } from '../core/key-limits.js';
import type { ChangeCounters } from './change-counters.js';
import { sql, type Kysely } from './kysely.js';
import type { Database } from './schema.js';
import type { KeyRecord, KeysRepository, KeyStatus, NewKey } from './store.js';
import { byBytes, compareText } from './text-order.js';

const keyColumns = [
  'api_keys.id',
  'api_keys.account_id',
  'accounts.name as account_name',
  'api_keys.name',
  'api_keys.secret_prefix',
  'api_keys.secret_last_four',
  'api_keys.status',
  'api_keys.models',
  'api_keys.expires_at',
  'api_keys.created_at',
  'api_keys.last_used_at',
  'api_keys.limits',
  'accounts.limits as account_limits',
  'accounts.disabled as account_disabled',
] as const;

/** Keys looked up or updated per statement (well under SQLite's and PostgreSQL's parameter limits). */
const LOOKUP_CHUNK = 500;

type KeyRow = Omit<Selectable<Database['api_keys']>, 'secret_hash' | 'updated_at'> & { account_name: string; account_limits: string | null; account_disabled: number };

function toKeyRecord(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    accountName: row.account_name,
    name: row.name,
    secretPrefix: row.secret_prefix,
    secretLastFour: row.secret_last_four,
    status: row.status as KeyStatus,
    models: row.models === null ? null : (JSON.parse(row.models) as string[]),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    limits: parseStoredLimits(row.limits),
    accountLimits: parseStoredLimits(row.account_limits),
    accountDisabled: Number(row.account_disabled) === 1,
  };
}

/** API keys, read with their account's name, limits and status; every change bumps the keys counter. */
export class SqlKeys implements KeysRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly counters: ChangeCounters,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  private selectKeys() {
    return this.db.selectFrom('api_keys').innerJoin('accounts', 'accounts.id', 'api_keys.account_id').select(keyColumns);
  }

  async create(key: NewKey): Promise<KeyRecord> {
    await this.counters.write(this.db, async (tx, bump) => {
      await tx
        .insertInto('api_keys')
        .values({
          id: key.id,
          account_id: key.accountId,
          name: key.name,
          secret_hash: key.secretHash,
          secret_prefix: key.secretPrefix,
          secret_last_four: key.secretLastFour,
          status: 'active',
          models: key.models === null ? null : JSON.stringify(key.models),
          expires_at: key.expiresAt,
          created_at: key.createdAt,
          updated_at: key.createdAt,
          last_used_at: null,
          limits: storedLimits(key.limits),
        })
        .execute();
      await bump('keys');
    });
    return (await this.get(key.id))!;
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    const row = await this.selectKeys().where('api_keys.id', '=', id).executeTakeFirst();
    return row && toKeyRecord(row);
  }

  async list(filter: { accountName?: string } = {}): Promise<KeyRecord[]> {
    let query = this.selectKeys().orderBy('api_keys.created_at').orderBy(byBytes('api_keys.id', this.dialect));
    if (filter.accountName !== undefined) query = query.where('accounts.name', '=', filter.accountName);
    return (await query.execute()).map(toKeyRecord);
  }

  async findBySecretHashes(secretHashes: readonly string[]): Promise<Map<string, KeyRecord>> {
    const found = new Map<string, KeyRecord>();
    for (let start = 0; start < secretHashes.length; start += LOOKUP_CHUNK) {
      const rows = await this.selectKeys()
        .select('api_keys.secret_hash')
        .where('api_keys.secret_hash', 'in', secretHashes.slice(start, start + LOOKUP_CHUNK))
        .execute();
      for (const row of rows) found.set(row.secret_hash, toKeyRecord(row));
    }
    return found;
  }

  setStatus(id: string, status: KeyStatus): Promise<KeyRecord | undefined> {
    return this.update(id, { status });
  }

  setLimits(id: string, limits: Limits | null): Promise<KeyRecord | undefined> {
    return this.update(id, { limits: storedLimits(limits) });
  }

  async recordUse(lastUsed: ReadonlyMap<string, number>): Promise<void> {
    if (lastUsed.size === 0) return;
    // Not a key change for caches: last-used time does not decide whether a key is accepted.
    // Keys in id order, so that two processes updating the same keys wait for each other rather than deadlock.
    const ordered = [...lastUsed].sort(([a], [b]) => compareText(a, b));
    await this.db.transaction().execute(async (tx) => {
      // One statement per chunk rather than one per key: a batch of many keys is a few round trips.
      for (let start = 0; start < ordered.length; start += LOOKUP_CHUNK) {
        const chunk = ordered.slice(start, start + LOOKUP_CHUNK);
        if (this.dialect === 'postgres') {
          // A single UPDATE locks its rows in the plan's order: take the locks in id order first, by
          // bytes (the order of the chunks), not the database locale's.
          await sql`SELECT id FROM api_keys WHERE id IN (${sql.join(chunk.map(([id]) => id))}) ORDER BY ${byBytes('id', 'postgres')} FOR UPDATE`.execute(tx);
        }
        const times = sql.join(chunk.map(([id, at]) => sql`(${id}, CAST(${at} AS BIGINT))`));
        await sql`WITH used (id, at) AS (VALUES ${times})
          UPDATE api_keys SET last_used_at = used.at FROM used
          WHERE api_keys.id = used.id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < used.at)`.execute(tx);
      }
    });
  }

  async version(): Promise<number> {
    const row = await this.db.selectFrom('meta').select('value').where('name', '=', 'keys_version').executeTakeFirstOrThrow();
    return Number(row.value);
  }

  /** Changes one key (a key change for caches); the key as it is now, or undefined for an unknown id. */
  private async update(id: string, change: Pick<Updateable<Database['api_keys']>, 'status' | 'limits'>): Promise<KeyRecord | undefined> {
    const changed = await this.counters.write(this.db, async (tx, bump) => {
      const result = await tx
        .updateTable('api_keys')
        .set({ ...change, updated_at: Date.now() })
        .where('id', '=', id)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await bump('keys');
      return true;
    });
    return changed ? this.get(id) : undefined;
  }
}
