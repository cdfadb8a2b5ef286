import type { Limits } from './key-limits.js';

/** Who is calling: an authenticated key, its account, and what the key may use. */
export interface Principal {
  readonly keyId: string;
  readonly accountId: string;
  readonly accountName: string;
  /** Model ids the key may use; null means every model. */
  readonly allowedModels: ReadonlySet<string> | null;
  /** The key's own limits and its account's (null: none), for the admit stage. */
  readonly keyLimits: Limits | null;
  readonly accountLimits: Limits | null;
}
