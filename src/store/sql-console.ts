import { sql, type Kysely } from './kysely.js';
import type { Database } from './schema.js';
import type { LoginAttempt, LoginThrottleRepository, SessionRecord, SessionsRepository } from './store.js';

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
        last_seen_at: session.lastSeenAt,
      })
      .execute();
  }

  async find(tokenHash: string, now: number, idleMs: number): Promise<SessionRecord | undefined> {
    const row = await this.db
      .selectFrom('console_sessions')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', now)
      .where('last_seen_at', '>', now - idleMs)
      .executeTakeFirst();
    return (
      row && {
        tokenHash: row.token_hash,
        accountId: row.account_id,
        createdAt: Number(row.created_at),
        expiresAt: Number(row.expires_at),
        lastSeenAt: Number(row.last_seen_at),
      }
    );
  }

  async touch(tokenHash: string, now: number): Promise<void> {
    await this.db.updateTable('console_sessions').set({ last_seen_at: now }).where('token_hash', '=', tokenHash).where('last_seen_at', '<', now).execute();
  }

  async delete(tokenHash: string): Promise<void> {
    await this.db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).execute();
  }

  async deleteExpired(now: number, idleMs: number): Promise<void> {
    await this.db
      .deleteFrom('console_sessions')
      .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', now - idleMs)]))
      .execute();
  }
}

/** Sign-in attempts per subject, shared by every process on the store. */
export class SqlLoginThrottle implements LoginThrottleRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async attempt(subject: string, now: number, windowMs: number, lockMs: (attempts: number) => number): Promise<LoginAttempt> {
    // The transaction begins with the write, which holds the store's write lock to the end: no
    // other attempt, in this process or another, can read the count between it and the lock-out.
    return this.db.transaction().execute(async (tx) => {
      const counted = await tx
        .insertInto('login_throttle')
        .values({ subject, failures: 1, last_failure_at: now, blocked_until: 0 })
        .onConflict((oc) =>
          oc
            .column('subject')
            .doUpdateSet({
              failures: sql`CASE WHEN login_throttle.last_failure_at < ${now - windowMs} THEN 1 ELSE login_throttle.failures + 1 END`,
              last_failure_at: now,
            })
            .where('login_throttle.blocked_until', '<=', now),
        )
        .returning('failures')
        .executeTakeFirst();
      if (counted === undefined) {
        const row = await tx.selectFrom('login_throttle').select(['failures', 'blocked_until']).where('subject', '=', subject).executeTakeFirstOrThrow();
        return { allowed: false, attempts: row.failures, blockedUntil: Number(row.blocked_until) };
      }
      const lock = lockMs(counted.failures);
      const blockedUntil = lock > 0 ? now + lock : 0;
      await tx.updateTable('login_throttle').set({ blocked_until: blockedUntil }).where('subject', '=', subject).execute();
      return { allowed: true, attempts: counted.failures, blockedUntil };
    });
  }

  async clear(subject: string): Promise<void> {
    await this.db.deleteFrom('login_throttle').where('subject', '=', subject).execute();
  }
}
