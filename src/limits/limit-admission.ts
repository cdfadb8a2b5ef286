import type { Logger } from 'pino';
import type { Principal } from '../core/principal.js';
import { PRICE_UNIT_FIELDS, type CatalogueModel } from '../catalogue/catalogue.js';
import type { GatewayConfig } from '../config/config-file.js';
import { GatewayError } from '../core/errors.js';
import { UNLIMITED, type Admission, type Admitted, type Demand } from '../generation/admission.js';
import { randomBase62 } from '../core/ids.js';
import type { UsageRepository } from '../store/store.js';
import { billingUnitsOf, costUsd, pricedFor, PRICES_OF, type BillingUnit } from '../pricing/cost.js';
import { REFUSAL_REASONS, type AdmitResult, type LimitCounter, type Reservation, type ScopeLimits, type WindowState } from './counter.js';
import { budgetWindow, DEFAULT_BUDGET_PERIOD, hasLimits, type Limits } from '../core/key-limits.js';

/** A scope's use of its limits, for the keys page. */
export interface LimitUse {
  /** In the rolling minute. */
  readonly requests: number;
  readonly tokens: number;
  readonly inFlight: number;
  /** Spent (and reserved) in the budget period; null without a budget. */
  readonly spentUsd: number | null;
  /** When the budget period ends (Infinity for a total budget); null without a budget. */
  readonly budgetResetsAt: number | null;
}

/** The configuration's `limits:` section. */
export type LimitSettings = GatewayConfig['limits'];

/**
 * The admit stage over limit counters. A request is admitted against its key's and its account's
 * limits at once, holding a reservation (the prompt's tokens plus its output cap, and their cost)
 * that is settled to the real usage when it ends; in-flight slots are leases this process renews
 * while the request runs.
 */
export class LimitAdmission implements Admission {
  /** Leases of requests in flight here that hold a concurrency slot. */
  private readonly held = new Map<string, readonly ScopeLimits[]>();
  private renewer: NodeJS.Timeout | undefined;
  /** Leases: unique across replicas by a random prefix, cheap within a process by a counter. */
  private readonly leasePrefix = `${randomBase62(10)}.`;
  private leases = 0;
  /**
   * Refusals by scope kind and reason (`key rpm`, `account budget`), each from 0: a counter that
   * appeared only at its first refusal would hide that refusal from Prometheus's `increase()`.
   */
  readonly refusals = new Map<string, number>(['key', 'account'].flatMap((scope) => [...REFUSAL_REASONS, 'unpriced'].map((reason) => [`${scope} ${reason}`, 0] as const)));

  constructor(
    private readonly counter: LimitCounter,
    private readonly usage: Pick<UsageRepository, 'spendSince'>,
    private readonly logger: Logger,
    private settings: LimitSettings,
    /** The clock that places a request in its budget period. */
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.renewer = setInterval(() => this.renew(), Math.max(50, this.settings.leaseMs / 3));
    this.renewer.unref();
  }

  /** From a reloaded configuration: admissions from now on, and the renewal of every lease, follow it. */
  reconfigure(settings: LimitSettings): void {
    this.settings = settings;
    if (this.renewer === undefined) return;
    clearInterval(this.renewer);
    this.start();
  }

  stop(): void {
    clearInterval(this.renewer);
    this.renewer = undefined;
  }

  async admit(principal: Principal, model: CatalogueModel, demand: Demand): Promise<Admitted> {
    const now = this.now();
    const scopes = [scopeOf(`key:${principal.keyId}`, principal.keyLimits, now), scopeOf(`account:${principal.accountId}`, principal.accountLimits, now)].filter(
      (scope): scope is ScopeLimits => scope !== null,
    );
    if (scopes.length === 0) return UNLIMITED;
    // A model without a price costs $0 whatever it consumes: a budget could not bind on it, so it fails closed.
    // A token count (no choices) is billed nothing at any price, so it is not refused for want of one.
    const budgeted = scopes.find((scope) => scope.budget !== null);
    if (budgeted !== undefined && demand.choices > 0) {
      const billed = billingUnitsOf(demand.units);
      if (!pricedFor(model.pricing, billed)) throw this.unpriced(budgeted.scope, model, billed);
    }
    const { reservation, beyondOrdinary } = await this.reservationFor(scopes, model, demand);
    // A budget admits while its spend plus what this request reserves beyond an ordinary one is below it
    // (see budgetRule): one that could not be admitted even at $0 is refused without counting anything.
    const unaffordable = beyondOrdinary.usd > 0 ? scopes.find((scope) => scope.budget !== null && beyondOrdinary.usd >= scope.budget.usd) : undefined;
    if (unaffordable !== undefined) {
      throw this.refused({ admitted: false, scope: unaffordable.scope, reason: 'budget', retryAfterMs: null, requests: null, tokens: null }, { ...beyondOrdinary, wholeBudgetUsd: unaffordable.budget!.usd }, demand);
    }
    const admitted = beyondOrdinary.usd > 0 ? scopes.map((scope) => budgetRule(scope, beyondOrdinary.usd)) : scopes;
    return this.hold(scopes, admitted, reservation, (refused) => refusal(refused, beyondOrdinary, demand), (used) => used, 'settling a request against its limits failed');
  }

  /**
   * Admits a call that has no model (an MCP tool call): the key's and account's `rpm` and
   * `concurrency` count it, `tpm` does not (it has no tokens); their budgets only when the call has
   * a price (`costUsd`, from `price_per_call`), reserved whole and settled to what the call cost.
   * Shares the counters, the leases and the refusal metric with model requests.
   */
  async admitCall(principal: Principal, call: { readonly costUsd: number | undefined }): Promise<Admitted> {
    const now = this.now();
    const priced = call.costUsd !== undefined;
    const scopes = [scopeOf(`key:${principal.keyId}`, principal.keyLimits, now), scopeOf(`account:${principal.accountId}`, principal.accountLimits, now)]
      .filter((scope): scope is ScopeLimits => scope !== null)
      .map((scope) => ({ ...scope, tpm: 0, budget: priced ? scope.budget : null }))
      .filter((scope) => scope.rpm > 0 || scope.concurrency > 0 || scope.budget !== null);
    if (scopes.length === 0) return UNLIMITED;
    const reservation: Reservation = { lease: `${this.leasePrefix}${this.leases++}`, tokens: 0, costUsd: call.costUsd ?? 0 };
    return this.hold(scopes, scopes, reservation, callRefusal, (used) => ({ tokens: 0, costUsd: used.costUsd }), 'settling a call against its limits failed');
  }

  /**
   * The counters' admission of a reservation, shared by requests and calls: seeded from the ledger
   * when a budget's counter is missing, refused (counted) with the caller's message, else held (a
   * concurrency slot's lease renewed here) until settled once. `admitted` are the scopes with the
   * rule the reservation is admitted by; `scopes` as they are settled.
   */
  private async hold(
    scopes: readonly ScopeLimits[],
    admitted: readonly ScopeLimits[],
    reservation: Reservation,
    refused: (result: Refusal) => GatewayError,
    usedOf: (used: Parameters<Admitted['settle']>[0]) => Parameters<Admitted['settle']>[0],
    settleFailure: string,
  ): Promise<Admitted> {
    let result = await this.counter.admit(admitted, reservation, this.settings.leaseMs);
    for (let seeded = 0; 'unseeded' in result; seeded++) {
      // Seeded, then lost again at once (Redis restarting): the request is not worth more tries.
      if (seeded === 2) throw new GatewayError('internal_error', 'The spend counters could not be prepared; try again shortly.');
      const unseeded = result.unseeded;
      await this.seed(scopes.filter((scope) => unseeded.includes(scope.scope)));
      result = await this.counter.admit(admitted, reservation, this.settings.leaseMs);
    }
    if (!result.admitted) {
      this.countRefusal(result.scope, result.reason);
      throw refused(result);
    }
    if (scopes.some((scope) => scope.concurrency > 0)) this.held.set(reservation.lease, scopes);
    let settled = false;
    return {
      headers: rateLimitHeaders(result.requests, result.tokens),
      settle: (used) => {
        if (settled) return;
        settled = true;
        this.held.delete(reservation.lease);
        this.counter.settle(scopes, reservation, usedOf(used)).catch((error: unknown) => this.logger.warn({ err: error }, settleFailure));
      },
    };
  }

  /**
   * What a key and its account have used against their limits now: requests and tokens in the
   * rolling minute, requests in flight, and the budget period's spend (from the ledger when no
   * request has started the period's counter yet). Null for a scope without limits.
   */
  async used(key: { readonly id: string; readonly accountId: string; readonly limits: Limits | null; readonly accountLimits: Limits | null }): Promise<{ key: LimitUse | null; account: LimitUse | null }> {
    const now = this.now();
    const scopes = [scopeOf(`key:${key.id}`, key.limits, now), scopeOf(`account:${key.accountId}`, key.accountLimits, now)];
    const present = scopes.filter((scope): scope is ScopeLimits => scope !== null);
    const usage = await this.counter.usage(present);
    const [keyUse, accountUse] = await Promise.all(
      scopes.map(async (scope) => {
        if (scope === null) return null;
        const use = usage[present.indexOf(scope)]!;
        let spentUsd = use.spentUsd;
        if (scope.budget !== null && spentUsd === null) {
          const [kind, id] = splitScope(scope.scope);
          spentUsd = await this.usage.spendSince(kind === 'key' ? { keyId: id } : { accountId: id }, scope.budget.periodStart);
        }
        return { requests: use.requests, tokens: use.tokens, inFlight: use.inFlight, spentUsd: scope.budget === null ? null : spentUsd, budgetResetsAt: scope.budget?.periodEnd ?? null };
      }),
    );
    return { key: keyUse ?? null, account: accountUse ?? null };
  }

  /** `key:…` or `account:…` refused for `reason`, in the refusal metric. */
  private countRefusal(scope: string, reason: string): void {
    const counted = `${scope.slice(0, scope.indexOf(':'))} ${reason}`;
    this.refusals.set(counted, (this.refusals.get(counted) ?? 0) + 1);
  }

  /** Counted in the refusal metric, then the caller's error. */
  private refused(result: Refusal, beyondOrdinary: BeyondOrdinary, demand: Demand): GatewayError {
    this.countRefusal(result.scope, result.reason);
    return refusal(result, beyondOrdinary, demand);
  }

  private unpriced(scope: string, model: CatalogueModel, billed: readonly BillingUnit[]): GatewayError {
    this.countRefusal(scope, 'unpriced');
    const owner = scope.startsWith('account:') ? "This key's account" : 'This API key';
    const prices = billed.flatMap((unit) => PRICES_OF[unit].map((field) => WRITTEN_AS.get(field))).join(', ');
    return new GatewayError(
      'model_unpriced',
      `The model \`${model.id}\` has no price for this request (none of ${prices}), and ${owner.charAt(0).toLowerCase()}${owner.slice(1)} has a spend budget, which cannot be kept on an unpriced model. Ask an operator to price it (a price of 0 makes it free).`,
      { param: 'model' },
    );
  }

  /**
   * The request's reservation (its prompt plus its output cap × its choices, and their cost with that of the units it asks for), and what
   * it costs beyond an ordinary request's: what the same prompt would reserve asking for one answer (one image)
   * and setting no output cap (the model's `max_output_tokens`, else `limits.default_max_output_tokens`).
   */
  private async reservationFor(scopes: readonly ScopeLimits[], model: CatalogueModel, demand: Demand): Promise<{ reservation: Reservation; beyondOrdinary: BeyondOrdinary }> {
    const lease = `${this.leasePrefix}${this.leases++}`;
    const ordinaryCap = model.maxOutputTokens ?? this.settings.defaultMaxOutputTokens;
    if (!scopes.some((scope) => scope.tpm > 0 || scope.budget !== null)) return { reservation: { lease, tokens: 0, costUsd: 0 }, beyondOrdinary: { usd: 0, ordinaryCap } };
    const cap = demand.maxOutputTokens ?? ordinaryCap;
    const perChoice = Math.min(cap, model.maxOutputTokens ?? cap);
    const output = perChoice * demand.choices;
    const input = await demand.promptTokens();
    const cost = costUsd(model, { input, output, cachedInput: 0, cacheWrite: 0, units: demand.units });
    const ordinary = costUsd(model, { input, output: Math.min(perChoice, ordinaryCap, output), cachedInput: 0, cacheWrite: 0, units: ordinaryUnits(demand.units) });
    return { reservation: { lease, tokens: input + output, costUsd: cost }, beyondOrdinary: { usd: Math.max(0, cost - ordinary), ordinaryCap } };
  }

  /** A budget's first use in a period (or after the counters were lost) starts from the ledger's spend. */
  private async seed(scopes: readonly ScopeLimits[]): Promise<void> {
    for (const scope of scopes) {
      const [kind, id] = splitScope(scope.scope);
      let spent: number;
      try {
        spent = await this.usage.spendSince(kind === 'key' ? { keyId: id } : { accountId: id }, scope.budget!.periodStart);
      } catch (error) {
        // Without the ledger a budget cannot be told: refuse rather than spend blind.
        throw new GatewayError('store_failure', 'The spend budget cannot be checked while the store is unavailable; try again shortly.', { cause: error });
      }
      await this.counter.seedSpend(scope, spent);
    }
  }

  private renew(): void {
    if (this.held.size === 0) return;
    const leases = [...this.held].map(([lease, scopes]) => ({ lease, scopes }));
    this.counter.renew(leases, this.settings.leaseMs).catch((error: unknown) => this.logger.warn({ err: error }, 'renewing in-flight leases failed'));
  }
}

/**
 * The units an ordinary request is billed: what it takes in (characters to speak, the call) is part
 * of it, as its prompt is; an ordinary request makes one image, as it asks for one answer, so the
 * images beyond the first are beyond it, as choices beyond the first are.
 */
function ordinaryUnits(units: Demand['units']): Demand['units'] {
  return units?.images === undefined ? units : { ...units, images: Math.min(units.images, 1) };
}

function scopeOf(scope: string, limits: Limits | null, now: number): ScopeLimits | null {
  if (!hasLimits(limits)) return null;
  const period = limits.budgetUsd === undefined ? undefined : budgetWindow(limits.budgetPeriod ?? DEFAULT_BUDGET_PERIOD, now);
  const budget = period === undefined ? null : { usd: limits.budgetUsd!, periodStart: period.start, periodEnd: period.end };
  return { scope, rpm: limits.rpm ?? 0, tpm: limits.tpm ?? 0, concurrency: limits.concurrency ?? 0, budget };
}

/** What a request's reservation costs beyond an ordinary request's, and the output cap that makes a request ordinary. */
interface BeyondOrdinary {
  readonly usd: number;
  readonly ordinaryCap: number;
  /** Set when `usd` is the whole budget or more: no period's renewal will admit the request. */
  readonly wholeBudgetUsd?: number;
}

/**
 * The budget a request is admitted against: the scope's, less what the request reserves beyond an
 * ordinary request. The counters admit while the spend is below it, so an ordinary request is
 * admitted while any budget is left (its reservation may take the spend past the budget: by one
 * request), and a larger one only where its reservation would not take the spend past the budget by
 * more than an ordinary request's. The counters (in memory and in Redis's scripts) keep one rule.
 */
function budgetRule(scope: ScopeLimits, beyondOrdinaryUsd: number): ScopeLimits {
  return scope.budget === null ? scope : { ...scope, budget: { ...scope.budget, usd: scope.budget.usd - beyondOrdinaryUsd } };
}

function splitScope(scope: string): [string, string] {
  const colon = scope.indexOf(':');
  return [scope.slice(0, colon), scope.slice(colon + 1)];
}

/** A call's refusal (an MCP call: no tokens, no output cap; a reservation of its price, if it has one). */
function callRefusal(result: Refusal): GatewayError {
  const owner = ownerOf(result);
  const retryAfter = retryAfterOf(result);
  const again = retryAfter === undefined ? '' : ` Try again in ${retryAfter} s.`;
  const headers = rateLimitHeaders(result.requests, null);
  const retry = retryAfter === undefined ? {} : { retryAfter };
  if (result.reason === 'budget') return new GatewayError('budget_exhausted', `${owner} has used its spend budget for this period, to which this MCP server's calls are charged (price_per_call).${again}`, { headers, ...retry });
  const limited = result.reason === 'concurrency' ? 'requests in flight' : 'requests per minute';
  return new GatewayError('rate_limited', `Rate limit reached: ${owner.charAt(0).toLowerCase()}${owner.slice(1)} is limited in ${limited}, and MCP calls count as requests.${again}`, { headers, type: 'requests', ...retry });
}

/** Each price as an operator writes it under `pricing:` (`input_per_mtok`), by the catalogue's name for it. */
const WRITTEN_AS = new Map(Object.entries(PRICE_UNIT_FIELDS).map(([written, field]) => [field, written]));

const REFUSALS = {
  rpm: 'requests per minute',
  tpm: 'tokens per minute',
  concurrency: 'requests in flight',
} as const;

type Refusal = Extract<AdmitResult, { reason: unknown }>;

/** Whose limit refused: the key's own, or its account's. */
function ownerOf(result: Refusal): string {
  return result.scope.startsWith('account:') ? "This key's account" : 'This API key';
}

/** `Retry-After` in whole seconds: when a window frees up, or 1 s for a slot in flight; undefined when waiting would not help. */
function retryAfterOf(result: Refusal): string | undefined {
  if (result.retryAfterMs === null) return result.reason === 'concurrency' ? '1' : undefined;
  return String(Math.max(1, Math.ceil(result.retryAfterMs / 1000)));
}

function refusal(result: Refusal, beyondOrdinary: BeyondOrdinary, demand: Demand): GatewayError {
  const owner = ownerOf(result);
  const headers = rateLimitHeaders(result.requests, result.tokens);
  const retryAfter = retryAfterOf(result);
  if (result.reason === 'budget') {
    const renews = retryAfter === undefined ? '' : ` It renews in ${retryAfter} s.`;
    const images = (demand.units?.images ?? 0) > 1;
    const beyond = `reserves ${usd(beyondOrdinary.usd)} more than an ordinary request (${images ? 'one image' : `one answer of at most ${beyondOrdinary.ordinaryCap} tokens`})`;
    const smaller = images ? 'Ask for fewer images (n).' : 'Ask for fewer choices (n) or a lower output cap (max_tokens).';
    const message =
      beyondOrdinary.usd === 0
        ? `${owner} has used its spend budget for this period.${renews} Check /app/keys.`
        : beyondOrdinary.wholeBudgetUsd !== undefined
          ? `This request ${beyond}, which is more than ${owner.charAt(0).toLowerCase()}${owner.slice(1)}'s whole spend budget (${usd(beyondOrdinary.wholeBudgetUsd)}). ${smaller}`
          : `${owner} has too little of its spend budget left for this request, which ${beyond}. ${smaller}${renews} Check /app/keys.`;
    return new GatewayError('budget_exhausted', message, { headers, ...(retryAfter === undefined ? {} : { retryAfter }) });
  }
  const never = result.reason === 'tpm' && result.retryAfterMs === null;
  // A request that generates nothing (an embedding) reserves its input alone: only a smaller input helps.
  const tooLarge =
    demand.maxOutputTokens === 0
      ? `${owner}'s tokens-per-minute limit is smaller than this request's input tokens; send fewer or shorter inputs.`
      : `${owner}'s tokens-per-minute limit is smaller than this request's reservation (its prompt plus its output cap); lower max_tokens.`;
  const message = never
    ? tooLarge
    : `Rate limit reached: ${owner.charAt(0).toLowerCase()}${owner.slice(1)} is limited in ${REFUSALS[result.reason]}.${retryAfter === undefined ? '' : ` Try again in ${retryAfter} s.`}`;
  return new GatewayError('rate_limited', message, {
    headers,
    type: result.reason === 'tpm' ? 'tokens' : 'requests',
    ...(retryAfter === undefined || never ? {} : { retryAfter }),
  });
}

/** `$0.635`, `$1.27`: three significant digits, enough to tell a reservation from a budget. */
function usd(amount: number): string {
  return `$${Number(amount.toPrecision(3))}`;
}

/** OpenAI's headers: the rolling-minute windows with the least room. */
function rateLimitHeaders(requests: WindowState | null, tokens: WindowState | null): Record<string, string> {
  const headers: Record<string, string> = {};
  if (requests !== null) {
    headers['x-ratelimit-limit-requests'] = String(requests.limit);
    headers['x-ratelimit-remaining-requests'] = String(requests.remaining);
    headers['x-ratelimit-reset-requests'] = duration(requests.resetMs);
  }
  if (tokens !== null) {
    headers['x-ratelimit-limit-tokens'] = String(tokens.limit);
    headers['x-ratelimit-remaining-tokens'] = String(tokens.remaining);
    headers['x-ratelimit-reset-tokens'] = duration(tokens.resetMs);
  }
  return headers;
}

/** OpenAI's duration form: `20ms`, `1.5s`, `6m0s`. */
function duration(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 1000) return `${whole}ms`;
  if (whole < 60_000) return `${Number((whole / 1000).toFixed(3))}s`;
  const minutes = Math.floor(whole / 60_000);
  return `${minutes}m${Number(((whole - minutes * 60_000) / 1000).toFixed(3))}s`;
}
