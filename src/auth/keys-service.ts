import { randomId } from '../core/ids.js';
import { normaliseLimits, type Limits } from '../core/key-limits.js';
import { UserError } from '../core/user-error.js';
import type { AccountRecord, KeyRecord, KeyStatus, Store } from '../store/store.js';
import { accountNameProblem } from './account-name.js';
import { generateSecret, secretParts, type SecretHasher } from './key-secret.js';

export interface CreateKeyInput {
  readonly accountName: string;
  readonly name?: string | undefined;
  readonly models?: readonly string[] | undefined;
  readonly expiresAt?: number | undefined;
  readonly limits?: Limits | undefined;
}

export class KeyManagementError extends UserError {
  override name = 'KeyManagementError';
}

/** Key management shared by the CLI and the console; the secret exists only in the return value. */
export async function createKey(store: Pick<Store, 'keys' | 'accounts'>, hasher: SecretHasher, input: CreateKeyInput): Promise<{ key: KeyRecord; secret: string }> {
  if (input.expiresAt !== undefined && input.expiresAt <= Date.now()) {
    throw new KeyManagementError('The expiry is in the past.');
  }
  const account = await ownerOf(store, input.accountName);
  const secret = generateSecret();
  const { prefix, lastFour } = secretParts(secret);
  const models = input.models === undefined || input.models.length === 0 ? null : [...new Set(input.models)];
  const key = await store.keys.create({
    id: randomId('key_'),
    accountId: account.id,
    name: input.name?.trim() || 'default',
    secretHash: hasher.hash(secret),
    secretPrefix: prefix,
    secretLastFour: lastFour,
    models,
    expiresAt: input.expiresAt ?? null,
    createdAt: Date.now(),
    limits: input.limits === undefined ? null : normaliseLimits(input.limits),
  });
  return { key, secret };
}

/**
 * The account of that name, made when new: the name rule applies to accounts made from now on, so
 * one made before it (with a space, say) keeps getting keys.
 */
async function ownerOf(store: Pick<Store, 'accounts'>, name: string): Promise<AccountRecord> {
  const existing = await store.accounts.byName(name);
  if (existing !== undefined) return existing;
  const problem = accountNameProblem(name);
  if (problem !== undefined) throw new KeyManagementError(problem);
  return store.accounts.ensure(name);
}

/** active ⇄ disabled; revoked is final. */
export async function changeKeyStatus(store: Pick<Store, 'keys'>, id: string, status: KeyStatus): Promise<KeyRecord> {
  const key = await store.keys.get(id);
  if (key === undefined) throw new KeyManagementError(`No key has the id '${id}'.`);
  if (key.status === 'revoked' && status !== 'revoked') throw new KeyManagementError(`Key '${id}' is revoked; a revoked key cannot be ${status === 'active' ? 'enabled' : 'disabled'}.`);
  if (key.status === status) return key;
  return (await store.keys.setStatus(id, status))!;
}

/** Replaces a key's limits; null (or limits with nothing set) removes them. */
export async function setKeyLimits(store: Pick<Store, 'keys'>, id: string, limits: Limits | null): Promise<KeyRecord> {
  const key = await store.keys.setLimits(id, limits === null ? null : normaliseLimits(limits));
  if (key === undefined) throw new KeyManagementError(`No key has the id '${id}'.`);
  return key;
}

/** Replaces the limits every key of an account shares; null (or limits with nothing set) removes them. */
export async function setAccountLimits(store: Pick<Store, 'accounts'>, name: string, limits: Limits | null): Promise<AccountRecord> {
  const account = await store.accounts.setLimits(name, limits === null ? null : normaliseLimits(limits));
  if (account === undefined) throw new KeyManagementError(`No account is named '${name}'.`);
  return account;
}
