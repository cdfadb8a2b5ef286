import { POSTGRES_CHANGE_CHANNEL, type ChangeHook, type ChangeTopic } from '../changes/change-feed.js';
import { sql, type Kysely } from './kysely.js';
import type { Database } from './schema.js';

/** The `meta` row counting each topic's changes. */
const COUNTER: Record<ChangeTopic, string> = { keys: 'keys_version', catalogue: 'catalogue_version', mcp: 'mcp_servers_version' };

/** Bumps a change counter, within the transaction of the change. */
export type BumpCounter = (topic: ChangeTopic) => Promise<void>;

/**
 * The one way a change to keys or the catalogue is written, so that every writer (a gateway's
 * console, a CLI command, any process) tells the others: the change's transaction bumps the
 * topic's counter in `meta` (which every process polls), and once it has committed the store calls
 * its change hook (which publishes on the change feed). On PostgreSQL the bump also NOTIFYs on
 * POSTGRES_CHANGE_CHANNEL, which PostgreSQL delivers at commit, so LISTEN/NOTIFY needs no hook.
 */
export class ChangeCounters {
  constructor(
    private readonly dialect: 'sqlite' | 'postgres',
    private readonly onChange: ChangeHook,
  ) {}

  /** Runs `work` in a transaction; for each counter it bumped, the hook is called after the commit. */
  async write<T>(db: Kysely<Database>, work: (tx: Kysely<Database>, bump: BumpCounter) => Promise<T>): Promise<T> {
    const bumped = new Set<ChangeTopic>();
    const result = await db.transaction().execute((tx) =>
      work(tx, async (topic) => {
        await tx
          .updateTable('meta')
          .set({ value: sql`value + 1` })
          .where('name', '=', COUNTER[topic])
          .execute();
        if (this.dialect === 'postgres') await sql`SELECT pg_notify(${POSTGRES_CHANGE_CHANNEL}, ${topic})`.execute(tx);
        bumped.add(topic);
      }),
    );
    for (const topic of bumped) await this.onChange(topic).catch(() => undefined);
    return result;
  }
}
