import { accountNameProblem } from '../auth/account-name.js';
import { UserError } from '../core/user-error.js';
import type { AccountRecord, NewSignInLink, Store } from '../store/store.js';
import { hashPassword, passwordProblem } from './passwords.js';
import { hashToken, newToken } from './tokens.js';

export class AccountError extends UserError {
  override name = 'AccountError';
}

/** How long a one-time sign-in link can be used. */
export const SIGN_IN_LINK_TTL_MS = 24 * 3_600_000;
/** Where a sign-in link's token goes; the access log records only this prefix, never the token. */
export const SIGN_IN_LINK_PREFIX = '/app/sign-in/';

/** How an account gets (or gets back) its password: typed by an admin, or set by its holder through a one-time link. */
export type PasswordChoice = { readonly password: string } | { readonly link: true };

/** The account, and the link's path (with its token) when one was made: shown once, stored only as a hash. */
export interface AccessGranted {
  readonly account: AccountRecord;
  readonly linkPath?: string;
}

/** The password's hash or a new link, checked before anything is stored. */
async function prepare(choice: PasswordChoice, now: number): Promise<{ passwordHash: string | null; link?: NewSignInLink; linkPath?: string }> {
  if ('password' in choice) {
    const problem = passwordProblem(choice.password);
    if (problem !== undefined) throw new AccountError(problem);
    return { passwordHash: await hashPassword(choice.password) };
  }
  const token = newToken();
  return { passwordHash: null, link: { tokenHash: hashToken(token), createdAt: now, expiresAt: now + SIGN_IN_LINK_TTL_MS }, linkPath: SIGN_IN_LINK_PREFIX + token };
}

/**
 * Gives an account console access. An account that already exists only to own keys (made by
 * `sluice keys create`) gets its access here; one that can already sign in must use `passwd`.
 */
export async function createConsoleAccount(store: Pick<Store, 'accounts'>, name: string, choice: PasswordChoice, isAdmin: boolean): Promise<AccessGranted> {
  const problem = accountNameProblem(name);
  if (problem !== undefined) throw new AccountError(problem);
  const { passwordHash, link, linkPath } = await prepare(choice, Date.now());
  const account = await store.accounts.grantConsoleAccess(name, { passwordHash, isAdmin, ...(link && { link }) });
  if (account === 'has_password') throw new AccountError(`Account '${name}' can already sign in; use \`sluice accounts passwd ${name}\` or its Password page to change its password.`);
  return { account, ...(linkPath && { linkPath }) };
}

/** Sets a new password or issues a new link (the old password then stops working); ends every session of the account. */
export async function resetPassword(store: Pick<Store, 'accounts'>, name: string, choice: PasswordChoice): Promise<AccessGranted> {
  const { passwordHash, link, linkPath } = await prepare(choice, Date.now());
  const account = await store.accounts.resetPassword(name, { passwordHash, ...(link && { link }) });
  if (account === undefined) throw new AccountError(`There is no account '${name}'.`);
  return { account, ...(linkPath && { linkPath }) };
}

/**
 * Makes an account an admin or not, disables or enables it. `actor` is the admin doing it in the
 * console (none from the CLI): nobody demotes or disables themself, and the last enabled admin stays.
 */
export async function changeAccount(store: Pick<Store, 'accounts'>, name: string, change: { isAdmin?: boolean; disabled?: boolean }, actor?: AccountRecord): Promise<AccountRecord> {
  if (actor?.name === name && (change.isAdmin === false || change.disabled === true)) {
    throw new AccountError(change.disabled ? 'You cannot disable your own account.' : 'You cannot remove your own admin rights.');
  }
  const account = await store.accounts.update(name, change);
  if (account === undefined) throw new AccountError(`There is no account '${name}'.`);
  if (account === 'last_admin') throw new AccountError(`'${name}' is the last enabled admin: make another account an admin first.`);
  return account;
}

/** Uses a one-time link to set the account's password; undefined when the link is unknown, used, expired or its account disabled. */
export async function redeemSignInLink(store: Pick<Store, 'signInLinks'>, token: string, password: string): Promise<AccountRecord | undefined> {
  const problem = passwordProblem(password);
  if (problem !== undefined) throw new AccountError(problem);
  return store.signInLinks.redeem(hashToken(token), Date.now(), await hashPassword(password));
}
