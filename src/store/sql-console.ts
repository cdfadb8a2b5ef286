import { sql, type Kysely } from './kysely.js';
import type { Database } from './schema.js';
import type { LoginThrottleRecord, LoginThrottleRepository, SessionRecord, SessionsRepository } from './store.js';

/** Console sessions, kept in the store so every process of a gateway sees the same ones. */
export class SqlSessions implements SessionsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async create(session: SessionRecord): Promise<void> {
    await this.db
      .insertInto('console_sessions')
      .values({
        token_hash: session.tokenHash,
        account_id: session.accountId,
        created_at: session.createdAt,
        expires_at: session.expiresAt,
      })
      .execute();
  }

  async find(tokenHash: string, now: number): Promise<SessionRecord | undefined> {
    const row = await this.db
      .selectFrom('console_sessions')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return row && { tokenHash: row.token_hash, accountId: row.account_id, createdAt: Number(row.created_at), expiresAt: Number(row.expires_at) };
  }

  async delete(tokenHash: string): Promise<void> {
    await this.db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).execute();
  }

  async deleteForAccount(accountId: string): Promise<void> {
    await this.db.deleteFrom('console_sessions').where('account_id', '=', accountId).execute();
  }

  async deleteExpired(now: number): Promise<void> {
    await this.db.deleteFrom('console_sessions').where('expires_at', '<=', now).execute();
  }
}

/** Failed sign-ins per subject, shared by every process on the store. */
export class SqlLoginThrottle implements LoginThrottleRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async get(subject: string): Promise<LoginThrottleRecord | undefined> {
    const row = await this.db.selectFrom('login_throttle').selectAll().where('subject', '=', subject).executeTakeFirst();
    return row && { failures: row.failures, lastFailureAt: Number(row.last_failure_at), blockedUntil: Number(row.blocked_until) };
  }

  async recordFailure(subject: string, now: number, windowMs: number): Promise<number> {
    // One upsert, so concurrent failures from several processes are all counted.
    await this.db
      .insertInto('login_throttle')
      .values({ subject, failures: 1, last_failure_at: now, blocked_until: 0 })
      .onConflict((oc) =>
        oc.column('subject').doUpdateSet({
          failures: sql`CASE WHEN login_throttle.last_failure_at < ${now - windowMs} THEN 1 ELSE login_throttle.failures + 1 END`,
          last_failure_at: now,
        }),
      )
      .execute();
    return (await this.get(subject))?.failures ?? 1;
  }

  async block(subject: string, until: number): Promise<void> {
    await this.db.updateTable('login_throttle').set({ blocked_until: until }).where('subject', '=', subject).execute();
  }

  async clear(subject: string): Promise<void> {
    await this.db.deleteFrom('login_throttle').where('subject', '=', subject).execute();
  }
}
