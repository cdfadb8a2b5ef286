/**
 * One conformance suite for every implementation of the limit-counter seam: in memory, and on the
 * real Redis of this machine under a key prefix of its own.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import type { LimitCounter, ScopeLimits } from '../src/limits/counter.js';
import { LocalCounter } from '../src/limits/local-counter.js';
import { RedisCounter } from '../src/limits/redis-counter.js';
import { cleanRedisPrefix, REDIS_URL, uniqueRedisPrefix } from './support/redis.js';
const LEASE_MS = 30_000;

function scope(id: string, limits: Partial<Omit<ScopeLimits, 'scope'>>): ScopeLimits {
  return { scope: id, rpm: 0, tpm: 0, concurrency: 0, budget: null, ...limits };
}

let leases = 0;
const reservation = (tokens = 10, costUsd = 0) => ({ lease: `lease-${++leases}`, tokens, costUsd });
const budget = (usd: number) => ({ usd, periodStart: Date.UTC(2026, 0, 1), periodEnd: Date.now() + 3_600_000 });

const implementations: [string, () => Promise<{ counter: LimitCounter; done: () => Promise<void> }>][] = [
  ['in memory', async () => ({ counter: new LocalCounter(), done: async () => undefined })],
  [
    'Redis',
    async () => {
      const redis = new Redis(REDIS_URL, { lazyConnect: true });
      await redis.connect();
      const prefix = uniqueRedisPrefix();
      return {
        counter: new RedisCounter(redis, prefix),
        done: async () => {
          redis.disconnect();
          await cleanRedisPrefix(prefix);
        },
      };
    },
  ],
];

for (const [name, make] of implementations) {
  describe(`limit counters: ${name}`, () => {
    const made: (() => Promise<void>)[] = [];
    after(async () => {
      for (const done of made) await done();
    });
    const counter = async () => {
      const { counter, done } = await make();
      made.push(done);
      return counter;
    };

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
      const c = await counter();
      const first = reservation();
      assert.ok((await c.admit(limits, first, LEASE_MS)).admitted, 'first admitted');
      assert.ok((await c.admit(limits, reservation(), 300)).admitted, 'second admitted (short lease)');
      const refused = await c.admit(limits, reservation(), LEASE_MS);
      assert.ok(!refused.admitted && 'reason' in refused && refused.reason === 'concurrency', 'third refused');
      await c.settle(limits, first, { tokens: 0, costUsd: 0 });
      const third = reservation();
      assert.ok((await c.admit(limits, third, 300)).admitted, 'admitted once the first settled');
      await new Promise((r) => setTimeout(r, 150));
      await c.renew([{ scopes: limits, lease: third.lease }], 600);
      await new Promise((r) => setTimeout(r, 250));
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
  });
}

describe('limit counters in memory: the rolling minute on a clock of the test', () => {
  test('requests and token reservations leave the window a minute after their admission', async () => {
    let now = 1_000_000;
    const counter = new LocalCounter(() => now);
    const limits = [scope('key:clock', { rpm: 2, tpm: 100 })];
    assert.ok((await counter.admit(limits, reservation(40), LEASE_MS)).admitted, 'first admitted');
    now += 30_000;
    assert.ok((await counter.admit(limits, reservation(40), LEASE_MS)).admitted, 'second admitted');
    const refused = await counter.admit(limits, reservation(40), LEASE_MS);
    assert.ok(!refused.admitted && 'reason' in refused && refused.reason === 'rpm' && refused.retryAfterMs === 30_000, 'third refused until the first leaves the window');
    now += 30_001;
    const third = await counter.admit(limits, reservation(40), LEASE_MS);
    assert.ok(third.admitted, 'admitted once the first left the window');
    assert.equal(third.tokens!.remaining, 20, "the first's tokens left with it (100 − 40 − 40)");
    now += 120_000;
    const [usage] = await counter.usage(limits);
    assert.deepEqual([usage!.requests, usage!.tokens], [0, 0], 'an idle minute later nothing is counted');
  });
});
