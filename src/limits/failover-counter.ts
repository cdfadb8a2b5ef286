import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { AdmitResult, LimitCounter, Reservation, ScopeLimits, ScopeUsage } from './counter.js';

const PROBE_INTERVAL_MS = 1_000;

/** Something the gateway runs degraded on, for `/status.json` and the logs. */
export interface Degradation {
  readonly component: string;
  readonly since: number;
  readonly message: string;
}

/**
 * Counters on Redis that fall back to this machine's counters while Redis cannot be reached, and
 * go back when it can: never silently (an error in the log at each change, and `degradation()` for
 * /status). A request is settled and renewed on the counters that admitted it.
 */
export class FailoverCounter implements LimitCounter {
  private downSince: number | null = null;
  private closing = false;
  /** While down on a failed command over a connection that stayed up, which no 'ready' will end. */
  private prober: NodeJS.Timeout | undefined;
  /** Leases admitted locally (during an outage), so their settling goes there too. */
  private readonly local = new Set<string>();

  constructor(
    private readonly shared: LimitCounter,
    private readonly fallback: LimitCounter,
    private readonly redis: Redis,
    private readonly where: string,
    private readonly logger: Logger,
  ) {
    redis.on('ready', () => this.up());
    redis.on('error', (error: Error) => this.down(error));
    redis.on('close', () => this.down(new Error('connection closed')));
  }

  degradation(): Degradation | null {
    return this.downSince === null
      ? null
      : { component: 'redis', since: this.downSince, message: `Redis (${this.where}) is unreachable: rate limits and budgets are counted on this machine only until it is back.` };
  }

  async admit(scopes: readonly ScopeLimits[], reservation: Reservation, leaseMs: number): Promise<AdmitResult> {
    if (this.downSince === null) {
      try {
        return await this.shared.admit(scopes, reservation, leaseMs);
      } catch (error) {
        this.down(error as Error);
      }
    }
    this.local.add(reservation.lease);
    return this.fallback.admit(scopes, reservation, leaseMs);
  }

  async settle(scopes: readonly ScopeLimits[], reservation: Reservation, used: { tokens: number; costUsd: number }): Promise<void> {
    if (this.local.delete(reservation.lease)) return this.fallback.settle(scopes, reservation, used);
    return this.shared.settle(scopes, reservation, used);
  }

  async renew(leases: readonly { scopes: readonly ScopeLimits[]; lease: string }[], leaseMs: number): Promise<void> {
    const here = leases.filter(({ lease }) => this.local.has(lease));
    const there = leases.filter(({ lease }) => !this.local.has(lease));
    await Promise.all([here.length > 0 && this.fallback.renew(here, leaseMs), there.length > 0 && this.downSince === null && this.shared.renew(there, leaseMs)]);
  }

  async seedSpend(scope: ScopeLimits, spentUsd: number): Promise<void> {
    // Seeded where the next admission will count.
    if (this.downSince === null) {
      try {
        return await this.shared.seedSpend(scope, spentUsd);
      } catch (error) {
        this.down(error as Error);
      }
    }
    return this.fallback.seedSpend(scope, spentUsd);
  }

  async usage(scopes: readonly ScopeLimits[]): Promise<ScopeUsage[]> {
    return this.downSince === null ? this.shared.usage(scopes) : this.fallback.usage(scopes);
  }

  /** Closes the Redis connection too. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.prober);
    await Promise.all([this.shared.close(), this.fallback.close()]);
    this.redis.disconnect();
  }

  private down(error: Error): void {
    if (this.downSince !== null || this.closing) return;
    this.downSince = Date.now();
    this.logger.error({ err: error, redis: this.where }, 'Redis is unreachable: rate limits and budgets fall back to counters on this machine');
    this.prober = setInterval(() => {
      // A reconnection ends the outage with its 'ready'; a connection that stayed up must answer.
      if (this.redis.status === 'ready') this.redis.ping().then(() => this.up(), () => undefined);
    }, PROBE_INTERVAL_MS);
    this.prober.unref();
  }

  private up(): void {
    if (this.downSince === null) return;
    clearInterval(this.prober);
    this.logger.warn({ redis: this.where, downForMs: Date.now() - this.downSince }, 'Redis is reachable again: rate limits and budgets are shared again');
    this.downSince = null;
  }
}
