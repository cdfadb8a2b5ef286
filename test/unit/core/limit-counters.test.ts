/**
 * The counter in memory: the limit-counter conformance suite (shared with the Redis counter's run in
 * test/limit-counters.test.ts), then its rolling windows, leases and budget periods on a clock of
 * the test.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AdmitResult } from '../../../src/limits/counter.js';
import { LocalCounter, tighter } from '../../../src/limits/local-counter.js';
import { LEASE_MS, limitCounterConformance, reservation, scope } from '../../support/limit-counter-conformance.js';

limitCounterConformance('in memory', async () => {
  let now = Date.now();
  return { counter: new LocalCounter(() => now), done: async () => undefined, elapse: async (ms) => void (now += ms) };
});

function refusalOf(result: AdmitResult): { reason: string; retryAfterMs: number | null; scope: string } {
  assert.ok(!result.admitted && 'reason' in result, `refused: ${JSON.stringify(result)}`);
  return result;
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

  test('an entry leaves the window exactly a minute after it came, which is the Retry-After given', async () => {
    let now = 5_000_000;
    const counter = new LocalCounter(() => now);
    const limits = [scope('key:edge', { rpm: 1 })];
    assert.ok((await counter.admit(limits, reservation(), LEASE_MS)).admitted);
    now += 1;
    assert.equal(refusalOf(await counter.admit(limits, reservation(), LEASE_MS)).retryAfterMs, 59_999);
    now += 59_998;
    assert.equal((await counter.admit(limits, reservation(), LEASE_MS)).admitted, false, '1 ms early');
    now += 1;
    assert.ok((await counter.admit(limits, reservation(), LEASE_MS)).admitted, 'on the dot');
  });

  test('a token refusal says when enough of the oldest reservations will have left for this one', async () => {
    let now = 1_000_000;
    const counter = new LocalCounter(() => now);
    const limits = [scope('key:tpm', { tpm: 100 })];
    for (let i = 0; i < 3; i++) {
      assert.ok((await counter.admit(limits, reservation(30), LEASE_MS)).admitted);
      now += 10_000;
    }
    // 90 held (admitted at 0, 10 and 20 s); 50 more needs 40 freed: the first two must leave, the second at 70 s.
    now = 1_000_000 + 20_000;
    assert.equal(refusalOf(await counter.admit(limits, reservation(50), LEASE_MS)).retryAfterMs, 50_000);
    now = 1_000_000 + 70_000;
    assert.ok((await counter.admit(limits, reservation(50), LEASE_MS)).admitted);
  });

  test('settling to fewer tokens frees room at once; to more, takes it; once the entry left the window, changes nothing', async () => {
    let now = 1_000_000;
    const counter = new LocalCounter(() => now);
    const limits = [scope('key:settle', { tpm: 100 })];
    const first = reservation(80);
    await counter.admit(limits, first, LEASE_MS);
    assert.equal((await counter.admit(limits, reservation(30), LEASE_MS)).admitted, false);
    await counter.settle(limits, first, { tokens: 20, costUsd: 0 });
    assert.equal((await counter.usage(limits))[0]!.tokens, 20);
    const second = reservation(30);
    assert.ok((await counter.admit(limits, second, LEASE_MS)).admitted, 'room for 30 after settling to 20');
    await counter.settle(limits, second, { tokens: 70, costUsd: 0 });
    assert.equal((await counter.usage(limits))[0]!.tokens, 90, 'an answer longer than reserved counts in full');
    now += 60_000;
    const late = reservation(40);
    await counter.admit(limits, late, LEASE_MS);
    now += 60_000;
    await counter.settle(limits, late, { tokens: 100, costUsd: 0 });
    assert.equal((await counter.usage(limits))[0]!.tokens, 0, 'a late settle neither adds to the window nor takes it below zero');
  });

  test('a slot in flight is released when its lease runs out, to the millisecond; a settled lease is not renewed back', async () => {
    let now = 1_000_000;
    const counter = new LocalCounter(() => now);
    const limits = [scope('key:lease', { concurrency: 1 })];
    const first = reservation();
    await counter.admit(limits, first, 1_000);
    now += 999;
    assert.equal(refusalOf(await counter.admit(limits, reservation(), 1_000)).reason, 'concurrency');
    now += 1;
    const second = reservation();
    assert.ok((await counter.admit(limits, second, 1_000)).admitted, 'the first lease ran out');
    await counter.settle(limits, second, { tokens: 0, costUsd: 0 });
    await counter.renew([{ scopes: limits, lease: second.lease }], 60_000);
    assert.equal((await counter.usage(limits))[0]!.inFlight, 0);
  });

  test('a concurrency refusal cannot say when: its Retry-After is unknown', async () => {
    const counter = new LocalCounter(() => 1_000_000);
    const limits = [scope('key:busy', { concurrency: 1 })];
    await counter.admit(limits, reservation(), LEASE_MS);
    assert.equal(refusalOf(await counter.admit(limits, reservation(), LEASE_MS)).retryAfterMs, null);
  });

  test('spend is kept per budget period: a new period is unseeded, whatever the last one spent', async () => {
    let now = Date.UTC(2026, 0, 31, 23, 0);
    const counter = new LocalCounter(() => now);
    const january = scope('key:periods', { budget: { usd: 1, periodStart: Date.UTC(2026, 0, 1), periodEnd: Date.UTC(2026, 1, 1) } });
    await counter.seedSpend(january, 1);
    const refused = refusalOf(await counter.admit([january], reservation(0, 0.1), LEASE_MS));
    assert.deepEqual([refused.reason, refused.retryAfterMs], ['budget', 3_600_000], 'renews when the period ends');
    now = Date.UTC(2026, 1, 1);
    const february = scope('key:periods', { budget: { usd: 1, periodStart: Date.UTC(2026, 1, 1), periodEnd: Date.UTC(2026, 2, 1) } });
    assert.deepEqual(await counter.admit([february], reservation(0, 0.1), LEASE_MS), { admitted: false, unseeded: ['key:periods'] });
    assert.deepEqual((await counter.usage([january, february])).map((use) => use.spentUsd), [1, null]);
  });

  test('a total budget, once spent, never renews: no Retry-After', async () => {
    const counter = new LocalCounter(() => 1_000_000);
    const total = scope('key:total', { budget: { usd: 1, periodStart: 0, periodEnd: Number.POSITIVE_INFINITY } });
    await counter.seedSpend(total, 1.5);
    assert.equal(refusalOf(await counter.admit([total], reservation(0, 0), LEASE_MS)).retryAfterMs, null);
  });

  test("all or nothing on tokens too: the account's refusal reserves nothing against the key", async () => {
    const counter = new LocalCounter(() => 1_000_000);
    const key = scope('key:both', { tpm: 1_000 });
    const account = scope('account:both', { tpm: 50 });
    assert.equal(refusalOf(await counter.admit([key, account], reservation(60), LEASE_MS)).scope, 'account:both');
    assert.deepEqual((await counter.usage([key, account])).map((use) => use.tokens), [0, 0]);
  });

  test("the windows reported are the tighter of the key's and its account's", async () => {
    const counter = new LocalCounter(() => 1_000_000);
    const result = await counter.admit([scope('key:w', { rpm: 10, tpm: 100 }), scope('account:w', { rpm: 3, tpm: 1_000 })], reservation(40), LEASE_MS);
    assert.ok(result.admitted);
    assert.deepEqual(result.requests, { limit: 3, remaining: 2, resetMs: 60_000 });
    assert.deepEqual(result.tokens, { limit: 100, remaining: 60, resetMs: 60_000 });
  });

  test('tighter: less room wins; at equal room, the later reset', () => {
    const a = { limit: 10, remaining: 2, resetMs: 5_000 };
    const b = { limit: 5, remaining: 3, resetMs: 1_000 };
    const c = { limit: 8, remaining: 2, resetMs: 9_000 };
    assert.equal(tighter(a, b), a);
    assert.equal(tighter(b, a), a);
    assert.equal(tighter(a, c), c);
    assert.equal(tighter(null, b), b);
    assert.equal(tighter(a, null), a);
  });
});
