import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { randomBase62 } from '../core/ids.js';
import type { AdmitResult, LimitCounter, Reservation, ScopeLimits, ScopeUsage } from './counter.js';

const PROBE_INTERVAL_MS = 1_000;

/** Settling a reservation to nothing: what a late admission Redis ran after this process fell back gives back. */
const RELEASED = { tokens: 0, costUsd: 0 } as const;

/** Something the gateway runs degraded on, for `/status.json` and the logs. */
export interface Degradation {
  readonly component: string;
  readonly since: number;
  readonly message: string;
}

/** Spend counted on this machine against one budget period. */
export interface SpendDelta {
  readonly scope: ScopeLimits;
  readonly usd: number;
}

/** What the failover needs of the shared counters beyond the seam. */
export interface SharedCounter extends LimitCounter {
  /** Adds spend counted elsewhere to the budget periods' counters: once per batch id, however often it is sent. */
  addSpend(batch: string, spends: readonly SpendDelta[]): Promise<void>;
}

interface PendingSettle {
  readonly scopes: readonly ScopeLimits[];
  readonly reservation: Reservation;
  readonly used: { readonly tokens: number; readonly costUsd: number };
}

/**
 * Counters on Redis that fall back to this machine's counters while Redis cannot be reached or
 * answers too late, and go back when it can: never silently (an error in the log at each change,
 * and `degradation()` for /status). A request is settled and renewed on the counters that admitted it.
 *
 * What an outage leaves behind is made good when Redis is back: an admission that timed out but
 * that Redis ran later is given back (its slot and reservation) as soon as its answer arrives; a
 * settle Redis did not take is sent again; and the spend this process counted locally is added to
 * Redis's budget counters, once (each replica adds only its own).
 */
export class FailoverCounter implements LimitCounter {
  private downSince: number | null = null;
  private closing = false;
  /** While down on a failed command over a connection that stayed up, which no 'ready' will end. */
  private prober: NodeJS.Timeout | undefined;
  private probing = false;
  /** Leases admitted locally (during an outage), so their settling goes there too. */
  private readonly local = new Set<string>();
  /** Settles of Redis's leases that did not reach it, sent again when it is back. */
  private unsettled: PendingSettle[] = [];
  /** Spend of locally admitted requests not yet added to Redis, by scope and period. */
  private readonly accrued = new Map<string, SpendDelta>();
  /** The batch being added (or to add again, under the same id, after a failure). */
  private batch: { readonly id: string; readonly spends: readonly SpendDelta[] } | null = null;
  private adding = false;
  /** Admissions that timed out, until Redis answered them and what they took was given back. */
  private readonly late = new Set<Promise<void>>();
  private recovering = false;
  private readonly batchPrefix = `${randomBase62(10)}.`;
  private batches = 0;

  constructor(
    private readonly shared: SharedCounter,
    private readonly fallback: LimitCounter,
    private readonly redis: Redis,
    private readonly where: string,
    private readonly logger: Logger,
    /** How long a request waits for Redis before it is counted here instead. */
    private readonly answerMs = 1_000,
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
      const asked = this.shared.admit(scopes, reservation, leaseMs);
      try {
        return await this.answered(asked);
      } catch (error) {
        this.down(error as Error);
        // A stalled Redis still runs the admission when it resumes; nobody would settle or renew that
        // lease, so it is given back as soon as its answer arrives (the request is counted here).
        const givenBack = asked.then(
          (late) => void (late.admitted && this.settleShared(scopes, reservation, RELEASED)),
          // The connection went: Redis dropped the command, or ran it and its slot expires with its lease.
          () => undefined,
        );
        this.late.add(givenBack);
        void givenBack.then(() => this.late.delete(givenBack));
      }
    }
    const result = await this.fallback.admit(scopes, reservation, leaseMs);
    if (result.admitted) this.local.add(reservation.lease);
    return result;
  }

  async settle(scopes: readonly ScopeLimits[], reservation: Reservation, used: { tokens: number; costUsd: number }): Promise<void> {
    if (!this.local.delete(reservation.lease)) return this.settleShared(scopes, reservation, used);
    this.accrue(scopes, used.costUsd);
    await this.fallback.settle(scopes, reservation, used);
    this.addAccrued();
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
        return await this.answered(this.shared.seedSpend(scope, spentUsd));
      } catch (error) {
        this.down(error as Error);
      }
    }
    return this.fallback.seedSpend(scope, spentUsd);
  }

  async usage(scopes: readonly ScopeLimits[]): Promise<ScopeUsage[]> {
    if (this.downSince === null) {
      try {
        return await this.answered(this.shared.usage(scopes));
      } catch (error) {
        this.down(error as Error);
      }
    }
    return this.fallback.usage(scopes);
  }

  /** Closes the Redis connection too. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.prober);
    await Promise.all([this.shared.close(), this.fallback.close()]);
    this.redis.disconnect();
  }

  /** Redis's answer, or a failure once it is later than a request may wait; the command itself goes on. */
  private answered<T>(asked: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${this.answerMs} ms`)), this.answerMs);
    });
    return Promise.race([asked, late]).finally(() => clearTimeout(timer));
  }

  /**
   * Resolves once Redis ran the settle, or once it is kept to be sent again: on a connection that
   * stays up a stalled Redis runs it in order when it resumes; one that went lost it.
   */
  private settleShared(scopes: readonly ScopeLimits[], reservation: Reservation, used: PendingSettle['used']): Promise<void> {
    const keep = () => void this.unsettled.push({ scopes, reservation, used });
    if (this.redis.status !== 'ready') return Promise.resolve(keep());
    return this.shared.settle(scopes, reservation, used).catch((error: Error) => {
      // Redis refusing the script is no outage: sending it again would fail the same way.
      if (error.name === 'ReplyError') this.logger.warn({ err: error }, 'settling a request against its limits failed');
      else keep();
    });
  }

  private accrue(scopes: readonly ScopeLimits[], usd: number): void {
    if (usd === 0) return;
    for (const scope of scopes) {
      if (scope.budget === null) continue;
      const period = `${scope.scope} ${scope.budget.periodStart}`;
      this.accrued.set(period, { scope, usd: (this.accrued.get(period)?.usd ?? 0) + usd });
    }
  }

  /** Adds the spend counted here to Redis's counters while it answers, one batch at a time. */
  private addAccrued(): void {
    if (this.adding || this.downSince !== null || this.closing) return;
    if (this.batch === null) {
      if (this.accrued.size === 0) return;
      this.batch = { id: `${this.batchPrefix}${this.batches++}`, spends: [...this.accrued.values()] };
      this.accrued.clear();
    }
    const { id, spends } = this.batch;
    this.adding = true;
    this.answered(this.shared.addSpend(id, spends)).then(
      () => {
        this.adding = false;
        this.batch = null;
        this.addAccrued();
      },
      (error: Error) => {
        this.adding = false;
        if (error.name !== 'ReplyError') return this.down(error);
        this.logger.error({ err: error, redis: this.where }, 'adding the spend counted during a Redis outage failed: budgets may allow that much more');
        this.batch = null;
      },
    );
  }

  private down(error: Error): void {
    if (this.downSince !== null || this.closing) return;
    this.downSince = Date.now();
    this.logger.error({ err: error, redis: this.where }, 'Redis is unreachable: rate limits and budgets fall back to counters on this machine');
    this.prober = setInterval(() => {
      // A reconnection ends the outage with its 'ready'; a connection that stayed up must answer.
      // A script, not a PING: Redis holds scripts under `CLIENT PAUSE WRITE` but answers PINGs.
      if (this.redis.status !== 'ready' || this.probing) return;
      this.probing = true;
      this.redis.eval('return 1', 0).then(
        () => ((this.probing = false), this.up()),
        () => (this.probing = false),
      );
    }, PROBE_INTERVAL_MS);
    this.prober.unref();
  }

  private up(): void {
    if (this.downSince === null || this.recovering) return;
    if (this.late.size > 0) {
      // Redis answered them before this (on the same connection; or they failed with the old one):
      // give back what they took before admitting there again, else a new request may find no slot.
      this.recovering = true;
      void Promise.all(this.late).then(() => {
        this.recovering = false;
        this.up();
      });
      return;
    }
    clearInterval(this.prober);
    this.logger.warn({ redis: this.where, downForMs: Date.now() - this.downSince }, 'Redis is reachable again: rate limits and budgets are shared again');
    this.downSince = null;
    // Written before any admission from now on, so Redis runs them first.
    for (const { scopes, reservation, used } of this.unsettled.splice(0)) void this.settleShared(scopes, reservation, used);
    this.addAccrued();
  }
}
