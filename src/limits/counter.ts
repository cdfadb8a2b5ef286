/**
 * The seam under the admit stage: counters that admit a request against every limit of its scopes
 * (its key's and its account's) in one atomic step, and settle it when it ends. Implemented in
 * memory (one process, or a cluster's primary for its workers) and on Redis (every replica); one
 * conformance suite runs against each (test/limit-counters.test.ts).
 */

/** What a scope allows; 0 or absent means no limit of that kind. */
export interface ScopeLimits {
  /** `key:<id>` or `account:<id>`. */
  readonly scope: string;
  readonly rpm: number;
  readonly tpm: number;
  readonly concurrency: number;
  /**
   * The budget of the period containing the request, admitted while the spend is below `usd` (the
   * admit stage picks the period, and lowers `usd` for a request that reserves more than an ordinary one).
   */
  readonly budget: { readonly usd: number; readonly periodStart: number; readonly periodEnd: number } | null;
}

/** What one request holds until it is settled. */
export interface Reservation {
  /** Unique per request: the in-flight slot and the token entry are keyed by it. */
  readonly lease: string;
  /** The prompt's tokens plus the most the answer may hold. */
  readonly tokens: number;
  /** Those tokens at the model's prices. */
  readonly costUsd: number;
}

/** A rolling-minute window as the `x-ratelimit-*` headers tell it, after this request. */
export interface WindowState {
  readonly limit: number;
  readonly remaining: number;
  /** Until the oldest entry leaves the window (room for one more then). */
  readonly resetMs: number;
}

export const REFUSAL_REASONS = ['rpm', 'tpm', 'concurrency', 'budget'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export type AdmitResult =
  | { readonly admitted: true; readonly requests: WindowState | null; readonly tokens: WindowState | null }
  | {
      readonly admitted: false;
      readonly scope: string;
      readonly reason: RefusalReason;
      /** When trying again can succeed; null when it cannot be told (a slot in flight) or never (a total budget). */
      readonly retryAfterMs: number | null;
      readonly requests: WindowState | null;
      readonly tokens: WindowState | null;
    }
  /** A budget's counter for the period is missing (first use, or the counters were lost): seed it from the ledger, then admit again. */
  | { readonly admitted: false; readonly unseeded: readonly string[] };

/** What a scope has used, for the keys page. */
export interface ScopeUsage {
  readonly requests: number;
  readonly tokens: number;
  readonly inFlight: number;
  /** Null when the period's counter is not seeded yet. */
  readonly spentUsd: number | null;
}

export interface LimitCounter {
  /** Admits against every scope at once, or against none. */
  admit(scopes: readonly ScopeLimits[], reservation: Reservation, leaseMs: number): Promise<AdmitResult>;
  /** The request ended: its tokens and cost become the real ones, its slot is released. */
  settle(scopes: readonly ScopeLimits[], reservation: Reservation, used: { readonly tokens: number; readonly costUsd: number }): Promise<void>;
  /** Extends the leases of requests still in flight. */
  renew(leases: readonly { readonly scopes: readonly ScopeLimits[]; readonly lease: string }[], leaseMs: number): Promise<void>;
  /** Sets a budget period's spend unless another process already did (never adds to it). */
  seedSpend(scope: ScopeLimits, spentUsd: number): Promise<void>;
  usage(scopes: readonly ScopeLimits[]): Promise<ScopeUsage[]>;
  close(): Promise<void>;
}

export const WINDOW_MS = 60_000;
