// The shared flags (command.ts) and applying the limit flags to a key's or an account's limits,
// which checks them with the limits' schema.
import { limitsSchema, type Limits } from '../core/key-limits.js';
import { UserError } from '../core/user-error.js';
import type { LimitFlags } from './command.js';

export * from './command.js';

/** The flags given, applied over the current limits; throws a UserError for a combination that makes no sense. */
export function applyLimitFlags(current: Limits | null, flags: LimitFlags): Limits {
  const next: Record<string, unknown> = { ...current };
  for (const field of ['rpm', 'tpm', 'concurrency', 'budgetUsd', 'budgetPeriod', 'mcp'] as const) {
    if (flags[field] === 'none') delete next[field];
    else if (flags[field] !== undefined) next[field] = flags[field];
  }
  if (flags.budgetPeriod !== undefined && next.budgetUsd === undefined) throw new UserError('--budget-period needs --budget-usd.');
  if (next.budgetUsd === undefined) delete next.budgetPeriod;
  return limitsSchema.parse(next);
}
