// The usage page's parameters (range, account, breakdown) read from its query into typed values,
// and written back into the links of the page and its CSV.
import { dayOf } from '../../../store/sql-status.js';
import type { Breakdown } from '../../../usage/usage-report.js';
import type { Session } from '../../sessions.js';

/** The ranges offered, in days up to today (UTC) included. */
export const RANGES = [7, 30, 90] as const;
type Range = (typeof RANGES)[number];
const DEFAULT_RANGE: Range = 30;

/** The page's parameters as typed values: anything unknown falls back to the default. */
export interface UsageParams {
  readonly range: Range;
  /** An admin's choice of account by name; null for all. Members always see their own. */
  readonly account: string | null;
  readonly breakdown: Breakdown;
}

export function parseParams(query: URLSearchParams, session: Session): UsageParams {
  const range = RANGES.find((r) => String(r) === query.get('range')) ?? DEFAULT_RANGE;
  const by = query.get('by');
  const breakdown: Breakdown = by === 'key' ? 'key' : 'model';
  // A member's `account` parameter is ignored: their own account is the only one they see.
  const account = session.account.isAdmin ? query.get('account') || null : null;
  return { range, account, breakdown };
}

/** The parameters as a query string; defaults are left out. */
export function queryOf(params: UsageParams): URLSearchParams {
  const query = new URLSearchParams();
  if (params.range !== DEFAULT_RANGE) query.set('range', String(params.range));
  if (params.account !== null) query.set('account', params.account);
  if (params.breakdown !== 'model') query.set('by', params.breakdown);
  return query;
}

/** The same page (or its CSV) with some parameters changed. */
export function usageHref(path: string, params: UsageParams, change: Partial<UsageParams> = {}): string {
  const text = queryOf({ ...params, ...change }).toString();
  return text === '' ? path : `${path}?${text}`;
}

/** The UTC days the range covers, today's included. */
export function days(params: UsageParams): { fromDay: number; toDay: number } {
  const toDay = dayOf(Date.now());
  return { fromDay: toDay - params.range + 1, toDay };
}
