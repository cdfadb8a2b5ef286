import { WINDOW_MS, type AdmitResult, type LimitCounter, type Reservation, type ScopeLimits, type ScopeUsage, type WindowState } from './counter.js';

interface TokenEntry {
  readonly at: number;
  readonly lease: string;
  tokens: number;
}

/**
 * A first-in first-out list read from a moving head, so that dropping what left the window costs
 * nothing per request; the array is compacted only once most of it is behind the head.
 */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The nth from the oldest (0: the oldest). */
  at(n: number): T | undefined {
    return this.items[this.head + n];
  }

  /** Drops the oldest items while `old` says so, handing each to `dropped`. */
  dropWhile(old: (item: T) => boolean, dropped?: (item: T) => void): void {
    while (this.head < this.items.length && old(this.items[this.head]!)) {
      const item = this.items[this.head++]!;
      dropped?.(item);
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i]!;
  }
}

/** One scope's counters; the same structures the Redis scripts keep (redis-counter.ts). */
class ScopeCounters {
  /** Admission times in the rolling minute, oldest first. */
  readonly requests = new Fifo<number>();
  /** Token reservations in the rolling minute, oldest first, and by lease for settling. */
  readonly tokens = new Fifo<TokenEntry>();
  readonly tokensByLease = new Map<string, TokenEntry>();
  tokenSum = 0;
  /** Lease → when it expires. */
  readonly inFlight = new Map<string, number>();
  /** Budget period start → spend. */
  readonly spend = new Map<number, number>();

  expire(now: number): void {
    const cutoff = now - WINDOW_MS;
    this.requests.dropWhile((at) => at <= cutoff);
    this.tokens.dropWhile(
      (entry) => entry.at <= cutoff,
      (entry) => {
        this.tokenSum -= entry.tokens;
        this.tokensByLease.delete(entry.lease);
      },
    );
    for (const [lease, expiresAt] of this.inFlight) if (expiresAt <= now) this.inFlight.delete(lease);
  }

  /** Nothing counted: the scope can be forgotten. */
  idle(now: number): boolean {
    for (const [start] of this.spend) if (start < now - 40 * 86_400_000) this.spend.delete(start);
    return this.requests.size === 0 && this.tokens.size === 0 && this.inFlight.size === 0 && this.spend.size === 0;
  }
}

/**
 * Limit counters in this process's memory: the embedded default with one process, the cluster
 * primary's for its workers (cluster-counter.ts), and the fallback while Redis is unreachable.
 */
export class LocalCounter implements LimitCounter {
  private readonly scopes = new Map<string, ScopeCounters>();
  private sweeps = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async admit(scopes: readonly ScopeLimits[], reservation: Reservation, leaseMs: number): Promise<AdmitResult> {
    const now = this.now();
    this.sweep(now);
    const counters = scopes.map((limits) => this.countersOf(limits.scope));
    const unseeded = scopes.filter((limits, i) => limits.budget !== null && !counters[i]!.spend.has(limits.budget.periodStart)).map((limits) => limits.scope);
    if (unseeded.length > 0) return { admitted: false, unseeded };

    let requests: WindowState | null = null;
    let tokens: WindowState | null = null;
    for (const [i, limits] of scopes.entries()) {
      const scope = counters[i]!;
      scope.expire(now);
      const refusal = refusalOf(limits, scope, reservation, now);
      if (refusal !== null) return { admitted: false, scope: limits.scope, ...refusal, requests: requestWindow(limits, scope, now), tokens: tokenWindow(limits, scope, now) };
    }
    for (const [i, limits] of scopes.entries()) {
      const scope = counters[i]!;
      if (limits.rpm > 0) scope.requests.push(now);
      if (limits.tpm > 0) {
        const entry = { at: now, lease: reservation.lease, tokens: reservation.tokens };
        scope.tokens.push(entry);
        scope.tokensByLease.set(reservation.lease, entry);
        scope.tokenSum += reservation.tokens;
      }
      if (limits.concurrency > 0) scope.inFlight.set(reservation.lease, now + leaseMs);
      if (limits.budget !== null) scope.spend.set(limits.budget.periodStart, scope.spend.get(limits.budget.periodStart)! + reservation.costUsd);
      requests = tighter(requests, requestWindow(limits, scope, now));
      tokens = tighter(tokens, tokenWindow(limits, scope, now));
    }
    return { admitted: true, requests, tokens };
  }

  async settle(scopes: readonly ScopeLimits[], reservation: Reservation, used: { tokens: number; costUsd: number }): Promise<void> {
    for (const limits of scopes) {
      const scope = this.scopes.get(limits.scope);
      if (scope === undefined) continue;
      const entry = scope.tokensByLease.get(reservation.lease);
      if (entry !== undefined) {
        scope.tokenSum += used.tokens - entry.tokens;
        entry.tokens = used.tokens;
      }
      scope.inFlight.delete(reservation.lease);
      const period = limits.budget?.periodStart;
      const spent = period === undefined ? undefined : scope.spend.get(period);
      if (spent !== undefined) scope.spend.set(period!, spent + used.costUsd - reservation.costUsd);
    }
  }

  async renew(leases: readonly { scopes: readonly ScopeLimits[]; lease: string }[], leaseMs: number): Promise<void> {
    const expiresAt = this.now() + leaseMs;
    for (const { scopes, lease } of leases) {
      for (const limits of scopes) {
        const inFlight = this.scopes.get(limits.scope)?.inFlight;
        if (inFlight?.has(lease)) inFlight.set(lease, expiresAt);
      }
    }
  }

  async seedSpend(limits: ScopeLimits, spentUsd: number): Promise<void> {
    if (limits.budget === null) return;
    const spend = this.countersOf(limits.scope).spend;
    if (!spend.has(limits.budget.periodStart)) spend.set(limits.budget.periodStart, spentUsd);
  }

  async usage(scopes: readonly ScopeLimits[]): Promise<ScopeUsage[]> {
    const now = this.now();
    return scopes.map((limits) => {
      const scope = this.scopes.get(limits.scope);
      scope?.expire(now);
      const spent = limits.budget === null ? undefined : scope?.spend.get(limits.budget.periodStart);
      return { requests: scope?.requests.size ?? 0, tokens: scope?.tokenSum ?? 0, inFlight: scope?.inFlight.size ?? 0, spentUsd: spent ?? null };
    });
  }

  async close(): Promise<void> {}

  private countersOf(scope: string): ScopeCounters {
    let counters = this.scopes.get(scope);
    if (counters === undefined) this.scopes.set(scope, (counters = new ScopeCounters()));
    return counters;
  }

  /** Now and then, forgets scopes with nothing counted, so memory follows the keys in use. */
  private sweep(now: number): void {
    if (++this.sweeps % 10_000 !== 0) return;
    for (const [id, scope] of this.scopes) {
      scope.expire(now);
      if (scope.idle(now)) this.scopes.delete(id);
    }
  }
}

function refusalOf(limits: ScopeLimits, scope: ScopeCounters, reservation: Reservation, now: number): { reason: 'rpm' | 'tpm' | 'concurrency' | 'budget'; retryAfterMs: number | null } | null {
  if (limits.rpm > 0 && scope.requests.size >= limits.rpm) {
    return { reason: 'rpm', retryAfterMs: scope.requests.at(scope.requests.size - limits.rpm)! + WINDOW_MS - now };
  }
  if (limits.tpm > 0 && scope.tokenSum + reservation.tokens > limits.tpm) {
    if (reservation.tokens > limits.tpm) return { reason: 'tpm', retryAfterMs: null };
    // Room comes back as the oldest reservations leave the window.
    let freed = 0;
    for (const entry of scope.tokens) {
      freed += entry.tokens;
      if (scope.tokenSum - freed + reservation.tokens <= limits.tpm) return { reason: 'tpm', retryAfterMs: entry.at + WINDOW_MS - now };
    }
    return { reason: 'tpm', retryAfterMs: WINDOW_MS };
  }
  if (limits.concurrency > 0 && scope.inFlight.size >= limits.concurrency) return { reason: 'concurrency', retryAfterMs: null };
  if (limits.budget !== null && scope.spend.get(limits.budget.periodStart)! >= limits.budget.usd) {
    return { reason: 'budget', retryAfterMs: Number.isFinite(limits.budget.periodEnd) ? limits.budget.periodEnd - now : null };
  }
  return null;
}

function requestWindow(limits: ScopeLimits, scope: ScopeCounters, now: number): WindowState | null {
  if (limits.rpm <= 0) return null;
  const oldest = scope.requests.at(0);
  return { limit: limits.rpm, remaining: Math.max(0, limits.rpm - scope.requests.size), resetMs: oldest === undefined ? 0 : oldest + WINDOW_MS - now };
}

function tokenWindow(limits: ScopeLimits, scope: ScopeCounters, now: number): WindowState | null {
  if (limits.tpm <= 0) return null;
  const oldest = scope.tokens.at(0);
  return { limit: limits.tpm, remaining: Math.max(0, limits.tpm - scope.tokenSum), resetMs: oldest === undefined ? 0 : oldest.at + WINDOW_MS - now };
}

/** Of two windows of the same kind (a key's and its account's), the one with less room. */
export function tighter(a: WindowState | null, b: WindowState | null): WindowState | null {
  if (a === null) return b;
  if (b === null) return a;
  return b.remaining < a.remaining || (b.remaining === a.remaining && b.resetMs > a.resetMs) ? b : a;
}
