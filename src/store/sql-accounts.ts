import type { Selectable } from 'kysely';
import { randomId } from '../core/ids.js';
import { parseStoredLimits, storedLimits, type Limits } from '../core/key-limits.js';
import type { ChangeCounters } from './change-counters.js';
import type { Kysely } from './kysely.js';
import type { Database } from './schema.js';
import type { AccountRecord, AccountsRepository, NewSignInLink, SignInLinksRepository } from './store.js';
import { byBytes } from './text-order.js';

export function toAccountRecord(row: Selectable<Database['accounts']>): AccountRecord {
  return {
    id: row.id,
    name: row.name,
    createdAt: Number(row.created_at),
    isAdmin: Number(row.is_admin) === 1,
    hasPassword: row.password_hash !== null,
    limits: parseStoredLimits(row.limits),
    disabled: Number(row.disabled) === 1,
  };
}

async function insertLink(tx: Kysely<Database>, accountId: string, link: NewSignInLink): Promise<void> {
  await tx
    .insertInto('sign_in_links')
    .values({ token_hash: link.tokenHash, account_id: accountId, created_at: link.createdAt, expires_at: link.expiresAt, used_at: null })
    .execute();
}

/** Accounts; each change is one transaction, and those that decide whether keys are accepted bump the keys counter. */
export class SqlAccounts implements AccountsRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly counters: ChangeCounters,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  async ensure(name: string): Promise<AccountRecord> {
    await this.db
      .insertInto('accounts')
      .values({ id: randomId('acct_'), name, created_at: Date.now() })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    return (await this.byName(name))!;
  }

  async byName(name: string): Promise<AccountRecord | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toAccountRecord(row);
  }

  async get(id: string): Promise<AccountRecord | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toAccountRecord(row);
  }

  async list(): Promise<AccountRecord[]> {
    return (await this.db.selectFrom('accounts').selectAll().orderBy(byBytes('name', this.dialect)).execute()).map(toAccountRecord);
  }

  async passwordHash(name: string): Promise<{ account: AccountRecord; passwordHash: string } | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirst();
    if (row === undefined || row.password_hash === null) return undefined;
    return { account: toAccountRecord(row), passwordHash: row.password_hash };
  }

  async grantConsoleAccess(name: string, access: { passwordHash: string | null; isAdmin: boolean; link?: NewSignInLink }): Promise<AccountRecord | 'has_password'> {
    return this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('accounts')
        .values({ id: randomId('acct_'), name, created_at: Date.now() })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      const row = await tx.selectFrom('accounts').selectAll().where('name', '=', name).$call(this.locked).executeTakeFirstOrThrow();
      if (row.password_hash !== null) return 'has_password';
      await tx.updateTable('accounts').set({ password_hash: access.passwordHash, is_admin: access.isAdmin ? 1 : 0 }).where('id', '=', row.id).execute();
      if (access.link !== undefined) await insertLink(tx, row.id, access.link);
      return toAccountRecord({ ...row, password_hash: access.passwordHash, is_admin: access.isAdmin ? 1 : 0 });
    });
  }

  async resetPassword(name: string, access: { passwordHash: string | null; link?: NewSignInLink }): Promise<AccountRecord | undefined> {
    return this.db.transaction().execute(async (tx) => {
      const row = await tx.selectFrom('accounts').selectAll().where('name', '=', name).$call(this.locked).executeTakeFirst();
      if (row === undefined) return undefined;
      const now = access.link?.createdAt ?? Date.now();
      await tx.updateTable('accounts').set({ password_hash: access.passwordHash }).where('id', '=', row.id).execute();
      await tx.deleteFrom('console_sessions').where('account_id', '=', row.id).execute();
      // An earlier link must not set a password over the one just chosen.
      await tx.updateTable('sign_in_links').set({ used_at: now }).where('account_id', '=', row.id).where('used_at', 'is', null).execute();
      if (access.link !== undefined) await insertLink(tx, row.id, access.link);
      return toAccountRecord({ ...row, password_hash: access.passwordHash });
    });
  }

  async update(name: string, change: { isAdmin?: boolean; disabled?: boolean }): Promise<AccountRecord | 'last_admin' | undefined> {
    return this.counters.write(this.db, async (tx, bump) => {
      // PostgreSQL: two admins demoting each other at once must not both see the other still an
      // admin; locking every admin row first makes them take turns. (SQLite has one writer.)
      if (this.dialect === 'postgres') await tx.selectFrom('accounts').select('id').where('is_admin', '=', 1).forUpdate().execute();
      const before = await tx.selectFrom('accounts').selectAll().where('name', '=', name).executeTakeFirst();
      if (before === undefined) return undefined;
      const after = {
        ...before,
        ...(change.isAdmin === undefined ? {} : { is_admin: change.isAdmin ? 1 : 0 }),
        ...(change.disabled === undefined ? {} : { disabled: change.disabled ? 1 : 0 }),
      };
      const enabledAdmin = (row: typeof before) => Number(row.is_admin) === 1 && Number(row.disabled) === 0;
      if (enabledAdmin(before) && !enabledAdmin(after)) {
        const others = await tx
          .selectFrom('accounts')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('is_admin', '=', 1)
          .where('disabled', '=', 0)
          .where('id', '!=', before.id)
          .executeTakeFirstOrThrow();
        if (Number(others.n) === 0) return 'last_admin';
      }
      await tx.updateTable('accounts').set({ is_admin: after.is_admin, disabled: after.disabled }).where('id', '=', before.id).execute();
      if (Number(after.disabled) === 1) await tx.deleteFrom('console_sessions').where('account_id', '=', before.id).execute();
      // Cached keys carry their account's status.
      if (Number(after.disabled) !== Number(before.disabled)) await bump('keys');
      return toAccountRecord(after);
    });
  }

  async setLimits(name: string, limits: Limits | null): Promise<AccountRecord | undefined> {
    const changed = await this.counters.write(this.db, async (tx, bump) => {
      const result = await tx.updateTable('accounts').set({ limits: storedLimits(limits) }).where('name', '=', name).executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      // Cached keys carry their account's limits.
      await bump('keys');
      return true;
    });
    return changed ? this.byName(name) : undefined;
  }

  /** On PostgreSQL, locks the row read until the transaction ends (SQLite has one writer). */
  private readonly locked = <Q extends { forUpdate(): Q }>(query: Q): Q => (this.dialect === 'postgres' ? query.forUpdate() : query);
}

export class SqlSignInLinks implements SignInLinksRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async find(tokenHash: string, now: number): Promise<AccountRecord | undefined> {
    const row = await this.db
      .selectFrom('sign_in_links')
      .innerJoin('accounts', 'accounts.id', 'sign_in_links.account_id')
      .selectAll('accounts')
      .where('sign_in_links.token_hash', '=', tokenHash)
      .where('sign_in_links.used_at', 'is', null)
      .where('sign_in_links.expires_at', '>', now)
      .where('accounts.disabled', '=', 0)
      .executeTakeFirst();
    return row && toAccountRecord(row);
  }

  async redeem(tokenHash: string, now: number, passwordHash: string): Promise<AccountRecord | undefined> {
    return this.db.transaction().execute(async (tx) => {
      // The conditional update is the one step that uses the link: of two uses at once, one matches.
      const used = await tx
        .updateTable('sign_in_links')
        .set({ used_at: now })
        .where('token_hash', '=', tokenHash)
        .where('used_at', 'is', null)
        .where('expires_at', '>', now)
        .where('account_id', 'in', (eb) => eb.selectFrom('accounts').select('id').where('disabled', '=', 0))
        .returning('account_id')
        .executeTakeFirst();
      if (used === undefined) return undefined;
      const account = await tx.selectFrom('accounts').selectAll().where('id', '=', used.account_id).executeTakeFirstOrThrow();
      await tx.updateTable('accounts').set({ password_hash: passwordHash }).where('id', '=', account.id).execute();
      await tx.deleteFrom('console_sessions').where('account_id', '=', account.id).execute();
      return toAccountRecord({ ...account, password_hash: passwordHash });
    });
  }

  async pending(now: number): Promise<Set<string>> {
    const rows = await this.db.selectFrom('sign_in_links').select('account_id').distinct().where('used_at', 'is', null).where('expires_at', '>', now).execute();
    return new Set(rows.map((row) => row.account_id));
  }
}
