import { accountNameProblem } from '../auth/account-name.js';
import { UserError } from '../user-error.js';
import type { AccountRecord, Store } from '../store/store.js';
import { hashPassword, passwordProblem } from './passwords.js';

export class AccountError extends UserError {
  override name = 'AccountError';
}

/**
 * Gives an account console access. An account that already exists only to own keys (made by
 * `sluice keys create`) gets its password here; one that can already sign in must use `passwd`.
 */
export async function createConsoleAccount(store: Store, name: string, password: string, isAdmin: boolean): Promise<AccountRecord> {
  const problem = accountNameProblem(name) ?? passwordProblem(password);
  if (problem !== undefined) throw new AccountError(problem);
  const existing = await store.accounts.byName(name);
  if (existing?.hasPassword) throw new AccountError(`Account '${name}' can already sign in; use \`sluice accounts passwd ${name}\` to change its password.`);
  const passwordHash = await hashPassword(password);
  await store.accounts.ensure(name);
  return (await store.accounts.setConsoleAccess(name, { passwordHash, isAdmin }))!;
}

/** Changes a password and ends every session of the account. */
export async function changePassword(store: Store, name: string, password: string): Promise<AccountRecord> {
  const problem = passwordProblem(password);
  if (problem !== undefined) throw new AccountError(problem);
  const existing = await store.accounts.byName(name);
  if (existing === undefined) throw new AccountError(`There is no account '${name}'.`);
  const account = (await store.accounts.setConsoleAccess(name, { passwordHash: await hashPassword(password) }))!;
  await store.sessions.deleteForAccount(account.id);
  return account;
}
