import { z } from 'zod';
import { BUDGET_PERIODS, type BudgetPeriod } from './budget-periods.js';
import { MCP_ALLOW_ENTRY, MCP_ALLOW_ENTRY_RULE, MCP_ALLOW_LIST_MAX } from './mcp-access.js';

export { BUDGET_PERIODS, type BudgetPeriod };

/** The limits of a key or an account; each one optional, an absent one does not limit. */
export interface Limits {
  /** Requests admitted in any rolling minute. */
  readonly rpm?: number;
  /** Tokens admitted in any rolling minute, counted on a reservation settled to the real usage. */
  readonly tpm?: number;
  /** Requests in flight at once. */
  readonly concurrency?: number;
  /** Spend in USD per `budgetPeriod`. */
  readonly budgetUsd?: number;
  readonly budgetPeriod?: BudgetPeriod;
  /** The MCP allow-list (core/mcp-access.ts): server ids and `server/tool` entries; absent, no MCP server at all. Not a counted limit. */
  readonly mcp?: readonly string[];
}

/** The stored (JSON) and typed-in form; the one place a limit is validated. */
const limitFields = z.object({
  rpm: z.number().int().positive().optional(),
  tpm: z.number().int().positive().optional(),
  concurrency: z.number().int().positive().optional(),
  budgetUsd: z.number().positive().finite().optional(),
  budgetPeriod: z.enum(BUDGET_PERIODS).optional(),
  mcp: z.array(z.string().regex(MCP_ALLOW_ENTRY, MCP_ALLOW_ENTRY_RULE)).max(MCP_ALLOW_LIST_MAX).optional(),
});
const periodNeedsBudget = (limits: z.infer<typeof limitFields>) => limits.budgetPeriod === undefined || limits.budgetUsd !== undefined;
const PERIOD_NEEDS_BUDGET = { message: 'a budget period needs a budget (budgetUsd)', path: ['budgetPeriod'] };

/** Limits as an operator sets them: an unknown field is a mistake to point out. */
export const limitsSchema = limitFields.strict().refine(periodNeedsBudget, PERIOD_NEEDS_BUDGET);
/** Limits as stored: a field a newer version added is dropped, not a reason to drop every limit. */
const storedLimitsSchema = limitFields.refine(periodNeedsBudget, PERIOD_NEEDS_BUDGET);

/** The budget period when a budget is given without one. */
export const DEFAULT_BUDGET_PERIOD: BudgetPeriod = 'month';

export function hasLimits(limits: Limits | null | undefined): limits is Limits {
  return limits != null && (limits.rpm !== undefined || limits.tpm !== undefined || limits.concurrency !== undefined || limits.budgetUsd !== undefined);
}

/** Whether a key's or its account's limits hold a spend budget (which binds only on priced models). */
export function hasBudget(...limits: readonly (Limits | null | undefined)[]): boolean {
  return limits.some((one) => one?.budgetUsd !== undefined);
}

/** Null for no limits, so that "none" is stored one way; an MCP allow-list alone is kept (deduplicated, an empty one dropped). */
export function normaliseLimits(limits: Limits): Limits | null {
  const mcp = limits.mcp === undefined || limits.mcp.length === 0 ? undefined : [...new Set(limits.mcp)];
  const budgetPeriod = limits.budgetUsd === undefined ? undefined : (limits.budgetPeriod ?? DEFAULT_BUDGET_PERIOD);
  const normal: Limits = {
    ...(limits.rpm === undefined ? {} : { rpm: limits.rpm }),
    ...(limits.tpm === undefined ? {} : { tpm: limits.tpm }),
    ...(limits.concurrency === undefined ? {} : { concurrency: limits.concurrency }),
    ...(limits.budgetUsd === undefined ? {} : { budgetUsd: limits.budgetUsd, budgetPeriod }),
    ...(mcp === undefined ? {} : { mcp }),
  };
  return hasLimits(normal) || mcp !== undefined ? normal : null;
}

/** Stored limits: tolerant of a row written by a newer version (unknown fields are dropped, bad ones make no limit). */
export function parseStoredLimits(json: string | null): Limits | null {
  if (json === null) return null;
  const parsed = storedLimitsSchema.safeParse(JSON.parse(json));
  return parsed.success ? normaliseLimits(parsed.data) : null;
}

export function storedLimits(limits: Limits | null): string | null {
  const normal = limits === null ? null : normaliseLimits(limits);
  return normal === null ? null : JSON.stringify(normal);
}

/** The period containing `now`, in UTC: its start and end (end is Infinity for `total`). */
export function budgetWindow(period: BudgetPeriod, now: number): { start: number; end: number } {
  const date = new Date(now);
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth();
  const d = date.getUTCDate();
  switch (period) {
    case 'day':
      return { start: Date.UTC(y, m, d), end: Date.UTC(y, m, d + 1) };
    case 'week': {
      const sinceMonday = (date.getUTCDay() + 6) % 7;
      return { start: Date.UTC(y, m, d - sinceMonday), end: Date.UTC(y, m, d - sinceMonday + 7) };
    }
    case 'month':
      return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
    case 'total':
      return { start: 0, end: Number.POSITIVE_INFINITY };
  }
}

/** One line for a CLI or a page: `rpm 100, tpm 50000, concurrency 4, $20.00/month`. */
export function describeLimits(limits: Limits | null): string {
  if (limits === null) return 'none';
  const parts: string[] = [];
  if (limits.rpm !== undefined) parts.push(`rpm ${limits.rpm}`);
  if (limits.tpm !== undefined) parts.push(`tpm ${limits.tpm}`);
  if (limits.concurrency !== undefined) parts.push(`concurrency ${limits.concurrency}`);
  if (limits.budgetUsd !== undefined) parts.push(`$${limits.budgetUsd}${limits.budgetPeriod === 'total' ? ' in total' : `/${limits.budgetPeriod ?? DEFAULT_BUDGET_PERIOD}`}`);
  if (limits.mcp !== undefined) parts.push(`mcp ${limits.mcp.join(',')}`);
  return parts.join(', ');
}
