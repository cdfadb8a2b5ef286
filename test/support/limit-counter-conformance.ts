/**
 * One conformance suite for every implementation of the limit-counter seam, run on the counter in
 * memory (test/unit/core/limits.test.ts, on a clock of the test) and on the real Redis of
 * this machine (test/limit-counters.test.ts).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { pino } from 'pino';
import type { Principal } from '../../src/core/principal.js';
import { modelFromConfig } from '../../src/catalogue/catalogue.js';
import { LIMITS_DEFAULTS, modelSchema } from '../../src/config/config-file.js';
import { GatewayError } from '../../src/core/errors.js';
import type { LimitCounter, ScopeLimits } from '../../src/limits/counter.js';
import { LimitAdmission } from '../../src/limits/limit-admission.js';

/** A counter made for one test, how to clean up after it, and how to let time pass on its clock. */
export interface CounterUnderTest {
  readonly counter: LimitCounter;
  done(): Promise<void>;
  /** Lets `ms` pass as the counter sees time: a test's own clock moved on, or a real wait. */
  elapse(ms: number): Promise<void>;
}

export const LEASE_MS = 30_000;

export function scope(id: string, limits: Partial<Omit<ScopeLimits, 'scope'>>): ScopeLimits {
  return { scope: id, rpm: 0, tpm: 0, concurrency: 0, budget: null, ...limits };
}

let leases = 0;
export const reservation = (tokens = 10, costUsd = 0) => ({ lease: `lease-${++leases}`, tokens, costUsd });
const budget = (usd: number) => ({ usd, periodStart: Date.UTC(2026, 0, 1), periodEnd: Date.now() + 3_600_000 });

/** Output at $5 per million tokens (input free): `n: 128, max_tokens: 1000` reserves $0.64, as in issue 24. */
const PRICED = modelFromConfig(modelSchema.parse({ id: 'priced', provider: 'p', endpoints: ['chat'], pricing: { input_per_mtok: 0, output_per_mtok: 5 } }));
/** The same price, with the catalogue's max_output_tokens: an ordinary request's answer is that long. */
const CAPPED = modelFromConfig(modelSchema.parse({ id: 'capped', provider: 'p', endpoints: ['chat'], max_output_tokens: 64000, pricing: { input_per_mtok: 0, output_per_mtok: 5 } }));

/** A key with a total budget (its period starts at 0, so the test seeds its counter as the ledger would). */
function budgetKey(id: string, budgetUsd: number): { principal: Principal; scope: ScopeLimits } {
  const principal: Principal = { keyId: id, accountId: `${id}-account`, accountName: id, allowedModels: null, keyLimits: { budgetUsd, budgetPeriod: 'total' }, accountLimits: null };
  return { principal, scope: scope(`key:${id}`, { budget: { usd: budgetUsd, periodStart: 0, periodEnd: Number.POSITIVE_INFINITY } }) };
}

const demand = (maxOutputTokens: number, choices = 1) => ({ promptTokens: async () => 20, maxOutputTokens, choices });

export function limitCounterConformance(name: string, make: () => Promise<CounterUnderTest>): void {
  describe(`limit counters: ${name}`, () => {
    const made: (() => Promise<void>)[] = [];
    after(async () => {
      for (const done of made) await done();
    });
    const underTest = async () => {
      const one = await make();
      made.push(one.done);
      return one;
    };
    const counter = async () => (await underTest()).counter;

    test('rpm: exactly that many admitted in the window, then a refusal saying when to come back', async () => {
      const limits = [scope('key:a', { rpm: 3 })];
      const c = await counter();
      const remaining: number[] = [];
      for (let i = 0; i < 3; i++) {
        const result = await c.admit(limits, reservation(), LEASE_MS);
        assert.ok(result.admitted, `request ${i} admitted`);
        remaining.push(result.requests!.remaining);
        assert.equal(result.requests!.limit, 3, 'the limit is reported');
      }
      assert.deepEqual(remaining, [2, 1, 0], 'remaining counts down');
      const refused = await c.admit(limits, reservation(), LEASE_MS);
      assert.ok(!refused.admitted && 'reason' in refused, 'the fourth is refused');
      assert.equal(refused.reason, 'rpm');
      assert.ok(refused.retryAfterMs !== null && refused.retryAfterMs > 50_000 && refused.retryAfterMs <= 60_000, `retry after about a minute, got ${refused.retryAfterMs}`);
    });

    test('a burst of concurrent admissions admits exactly the limit', async () => {
      const limits = [scope('key:burst', { rpm: 50 })];
      const c = await counter();
      const results = await Promise.all(Array.from({ length: 200 }, () => c.admit(limits, reservation(), LEASE_MS)));
      assert.equal(results.filter((r) => r.admitted).length, 50, 'exactly rpm admitted');
    });

    test("all or nothing: a refusal by the account's limit counts nothing against the key", async () => {
      const key = scope('key:b', { rpm: 5 });
      const account = scope('account:b', { rpm: 2 });
      const c = await counter();
      assert.ok((await c.admit([key, account], reservation(), LEASE_MS)).admitted, 'first admitted');
      assert.ok((await c.admit([key, account], reservation(), LEASE_MS)).admitted, 'second admitted');
      const refused = await c.admit([key, account], reservation(), LEASE_MS);
      assert.ok(!refused.admitted && 'scope' in refused && refused.scope === 'account:b', 'refused by the account');
      const [keyUsage, accountUsage] = await c.usage([key, account]);
      assert.equal(keyUsage!.requests, 2, 'the refused request is not counted against the key');
      assert.equal(accountUsage!.requests, 2, 'nor against the account');
    });

    test('tpm: reservations count until settled to the real usage; one larger than the limit is never admitted', async () => {
      const limits = [scope('key:t', { tpm: 1000 })];
      const c = await counter();
      const first = reservation(400);
      assert.ok((await c.admit(limits, first, LEASE_MS)).admitted, 'first admitted');
      const second = await c.admit(limits, reservation(400), LEASE_MS);
      assert.ok(second.admitted, 'second admitted');
      assert.equal(second.tokens!.remaining, 200, 'tokens remaining after two reservations');
      const third = reservation(400);
      const refused = await c.admit(limits, third, LEASE_MS);
      assert.ok(!refused.admitted && 'reason' in refused && refused.reason === 'tpm', 'third refused on tokens');
      assert.ok(refused.retryAfterMs !== null && refused.retryAfterMs > 0, 'with a time to retry');
      await c.settle(limits, first, { tokens: 100, costUsd: 0 });
      assert.ok((await c.admit(limits, third, LEASE_MS)).admitted, 'admitted once the first settled to 100 tokens');
      assert.equal((await c.usage(limits))[0]!.tokens, 900, 'the window holds 100 + 400 + 400');
      const huge = await c.admit(limits, reservation(1001), LEASE_MS);
      assert.ok(!huge.admitted && 'reason' in huge && huge.reason === 'tpm' && huge.retryAfterMs === null, 'a reservation above the limit: no retry can help');
    });

    test('concurrency: slots are released on settling, and by their lease running out', async () => {
      const limits = [scope('key:c', { concurrency: 2 })];
      const { counter: c, elapse } = await underTest();
      const first = reservation();
      assert.ok((await c.admit(limits, first, LEASE_MS)).admitted, 'first admitted');
      assert.ok((await c.admit(limits, reservation(), 300)).admitted, 'second admitted (short lease)');
      const refused = await c.admit(limits, reservation(), LEASE_MS);
      assert.ok(!refused.admitted && 'reason' in refused && refused.reason === 'concurrency', 'third refused');
      await c.settle(limits, first, { tokens: 0, costUsd: 0 });
      const third = reservation();
      assert.ok((await c.admit(limits, third, 300)).admitted, 'admitted once the first settled');
      await elapse(150);
      await c.renew([{ scopes: limits, lease: third.lease }], 600);
      await elapse(250);
      // The second's lease ran out; the third's was renewed.
      assert.equal((await c.usage(limits))[0]!.inFlight, 1, 'one slot still held');
      assert.ok((await c.admit(limits, reservation(), LEASE_MS)).admitted, 'the expired slot is free again');
      assert.ok(!(await c.admit(limits, reservation(), LEASE_MS)).admitted, 'the renewed one still counts');
    });

    test('budget: seeded once from the ledger, reserved at admission, settled to the real cost', async () => {
      const limits = [scope('key:d', { budget: budget(1) })];
      const c = await counter();
      const unseeded = await c.admit(limits, reservation(10, 0.3), LEASE_MS);
      assert.ok(!unseeded.admitted && 'unseeded' in unseeded && unseeded.unseeded[0] === 'key:d', 'the first admission asks for a seed');
      await c.seedSpend(limits[0]!, 0.5);
      await c.seedSpend(limits[0]!, 0.9); // a second replica seeding late changes nothing
      assert.equal((await c.usage(limits))[0]!.spentUsd, 0.5, 'the first seed stands');
      const first = reservation(10, 0.3);
      assert.ok((await c.admit(limits, first, LEASE_MS)).admitted, 'admitted at 0.5 spent');
      assert.ok((await c.admit(limits, reservation(10, 0.3), LEASE_MS)).admitted, 'admitted at 0.8 spent (under the budget)');
      const refused = await c.admit(limits, reservation(10, 0.3), LEASE_MS);
      assert.ok(!refused.admitted && 'reason' in refused && refused.reason === 'budget', 'refused at 1.1');
      assert.ok(refused.retryAfterMs !== null && refused.retryAfterMs > 3_000_000, 'retry when the period ends');
      await c.settle(limits, first, { tokens: 10, costUsd: 0.05 });
      assert.ok(Math.abs((await c.usage(limits))[0]!.spentUsd! - 0.85) < 1e-9, 'settled to the real cost');
      assert.ok((await c.admit(limits, reservation(10, 0.3), LEASE_MS)).admitted, 'admitted again at 0.85');
    });

    test('budget through the admit stage: admitted while any is left, unless the reservation passes it by more than an ordinary request', async () => {
      const c = await counter();
      // The ledger is never read: each key's counter is seeded first, as the ledger would seed it.
      const admission = new LimitAdmission(c, { spendSince: () => Promise.reject(new Error('the ledger is not read once seeded')) }, pino({ level: 'silent' }), { leaseMs: LEASE_MS, defaultMaxOutputTokens: LIMITS_DEFAULTS.default_max_output_tokens });
      const refusedWith = async (principal: Principal, maxTokens: number, choices: number, model = PRICED) => {
        const error = await admission.admit(principal, model, demand(maxTokens, choices)).then(
          () => assert.fail(`n: ${choices}, max_tokens: ${maxTokens} was admitted`),
          (thrown: unknown) => thrown,
        );
        assert.ok(error instanceof GatewayError && error.kind === 'budget_exhausted', `a budget refusal, got ${String(error)}`);
        return error;
      };

      // $0.05 budget, $0 spent: n 128 × 1,000 tokens reserves $0.64, $0.635 beyond an ordinary request ($0.005).
      const fresh = budgetKey(`fresh-${leases++}`, 0.05);
      await c.seedSpend(fresh.scope, 0);
      const huge = await refusedWith(fresh.principal, 1000, 128);
      assert.match(huge.message, /reserves \$0\.635 more than an ordinary request \(one answer of at most 4096 tokens\).*whole spend budget \(\$0\.05\)/);
      assert.equal(huge.retryAfter, undefined, 'no renewal admits it: no Retry-After');
      assert.equal(admission.refusals.get('key budget'), 1, 'counted among the refusals');
      assert.equal((await c.usage([fresh.scope]))[0]!.spentUsd, 0, 'the refusal reserved nothing');
      // An ordinary request is admitted at $0, however close its reservation comes to the budget.
      const ordinary = await admission.admit(fresh.principal, PRICED, demand(1000));
      assert.ok(Math.abs((await c.usage([fresh.scope]))[0]!.spentUsd! - 0.005) < 1e-12, 'its $0.005 reserved');
      ordinary.settle({ tokens: 520, costUsd: 0.0025 });

      // $0.049 spent: a request reserving $0.01 (one answer of 2,000 tokens) is admitted and may end past the budget.
      const nearlySpent = budgetKey(`nearly-${leases++}`, 0.05);
      await c.seedSpend(nearlySpent.scope, 0.049);
      await admission.admit(nearlySpent.principal, PRICED, demand(2000));
      assert.ok(Math.abs((await c.usage([nearlySpent.scope]))[0]!.spentUsd! - 0.059) < 1e-12, 'reserved past the budget, by one ordinary request');
      // Now spent: even an ordinary request is refused, with the message of a spent budget.
      assert.match((await refusedWith(nearlySpent.principal, 10, 1)).message, /has used its spend budget/);

      // Several choices fit while what they reserve beyond one answer fits in what is left:
      // n 4 × 1,000 tokens reserves $0.02, $0.015 beyond an ordinary request.
      const some = budgetKey(`some-${leases++}`, 0.05);
      await c.seedSpend(some.scope, 0.03);
      await admission.admit(some.principal, PRICED, demand(1000, 4));
      const spent = (await c.usage([some.scope]))[0]!.spentUsd!;
      assert.ok(Math.abs(spent - 0.05) < 1e-12, `admitted at $0.03 spent ($0.03 + $0.015 < $0.05), reserved to ${spent}`);
      const second = budgetKey(`second-${leases++}`, 0.05);
      await c.seedSpend(second.scope, 0.04);
      assert.match((await refusedWith(second.principal, 1000, 4)).message, /too little of its spend budget left for this request, which reserves \$0\.015 more/);
      assert.equal((await c.usage([second.scope]))[0]!.spentUsd, 0.04, 'refused at $0.04 spent ($0.04 + $0.015 ≥ $0.05), nothing reserved');

      // Where the catalogue caps the model's answer, an ordinary request may ask for all of it (as coding agents do):
      // one answer of 32,000 tokens ($0.16) is admitted at $0, two are $0.16 beyond an ordinary request and are not.
      const agent = budgetKey(`agent-${leases++}`, 0.05);
      await c.seedSpend(agent.scope, 0);
      assert.match((await refusedWith(agent.principal, 32000, 2, CAPPED)).message, /reserves \$0\.16 more than an ordinary request \(one answer of at most 64000 tokens\)/);
      await admission.admit(agent.principal, CAPPED, demand(32000));
      assert.ok(Math.abs((await c.usage([agent.scope]))[0]!.spentUsd! - 0.16) < 1e-12, 'the one answer reserved');
    });
  });
}
