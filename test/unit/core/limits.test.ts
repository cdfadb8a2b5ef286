/**
 * Limits in memory, on a clock of the test: the limit-counter conformance suite (shared with the
 * Redis counter's run in test/limit-counters.test.ts), the counter's rolling windows, leases and
 * budget periods; the admit stage over it (what a request reserves, the refusals with their
 * messages, Retry-After and `x-ratelimit-*` headers, budgets seeded from the ledger and renewed at
 * the period's turn); and the limits' own rules (limits.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import type { Principal } from '../../../src/core/principal.js';
import { modelFromConfig } from '../../../src/catalogue/catalogue.js';
import { modelSchema } from '../../../src/config/config-file.js';
import { GatewayError } from '../../../src/core/errors.js';
import { UNLIMITED, type Demand } from '../../../src/generation/admission.js';
import type { AdmitResult, ScopeLimits } from '../../../src/limits/counter.js';
import { LimitAdmission } from '../../../src/limits/limit-admission.js';
import { budgetWindow, describeLimits, limitsSchema, normaliseLimits, parseStoredLimits, storedLimits, type Limits } from '../../../src/core/key-limits.js';
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

/** $1 per million input tokens, $4 per million output. */
const MODEL = modelFromConfig(modelSchema.parse({ id: 'm', provider: 'p', endpoints: ['chat'], pricing: { input_per_mtok: 1, output_per_mtok: 4 } }));
const CAPPED = modelFromConfig(modelSchema.parse({ id: 'capped', provider: 'p', endpoints: ['chat'], max_output_tokens: 1_000 }));
const SETTINGS = { leaseMs: 30_000, defaultMaxOutputTokens: 4_096 };

function principal(keyLimits: Limits | null, accountLimits: Limits | null = null, id = 'k1'): Principal {
  return { keyId: id, accountId: `acc-${id}`, accountName: 'acc', allowedModels: null, keyLimits, accountLimits };
}

const demand = (maxOutputTokens: number | undefined, choices = 1, promptTokens = 20): Demand => ({ promptTokens: async () => promptTokens, maxOutputTokens, choices });

/** The ledger's spend as the admit stage reads it (the store's `spendSince`), recording each question. */
class Ledger {
  readonly asked: { who: { keyId?: string; accountId?: string }; since: number }[] = [];
  spent = 0;
  failing = false;
  async spendSince(who: { keyId?: string; accountId?: string }, since: number): Promise<number> {
    this.asked.push({ who, since });
    if (this.failing) throw new Error('the store is down');
    return this.spent;
  }
}

function setup(start = Date.UTC(2026, 10, 25, 12)) {
  const clock = { now: start };
  const counter = new LocalCounter(() => clock.now);
  const ledger = new Ledger();
  const admission = new LimitAdmission(counter, ledger, pino({ level: 'silent' }), SETTINGS, () => clock.now);
  return { clock, counter, ledger, admission };
}

async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(
    () => assert.fail('admitted'),
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof GatewayError, String(error));
  return error;
}

describe('the admit stage', () => {
  test('a key and account without limits: admitted as unlimited, counting nothing, not even the prompt', async () => {
    const { admission } = setup();
    const admitted = await admission.admit(principal(null), MODEL, { promptTokens: () => Promise.reject(new Error('not counted')), maxOutputTokens: 10, choices: 1 });
    assert.equal(admitted, UNLIMITED);
  });

  test('rpm: the x-ratelimit headers count down; the refusal names the limit and when to come back', async () => {
    const { admission, clock } = setup();
    const key = principal({ rpm: 2 });
    // rpm and concurrency need no token count: the prompt is not counted for them.
    const uncounted: Demand = { promptTokens: () => Promise.reject(new Error('not counted')), maxOutputTokens: undefined, choices: 1 };
    const first = await admission.admit(key, MODEL, uncounted);
    assert.deepEqual(first.headers, { 'x-ratelimit-limit-requests': '2', 'x-ratelimit-remaining-requests': '1', 'x-ratelimit-reset-requests': '1m0s' });
    clock.now += 30_500;
    const second = await admission.admit(key, MODEL, uncounted);
    assert.equal(second.headers['x-ratelimit-reset-requests'], '29.5s', 'until the oldest leaves');
    clock.now += 29_000;
    const error = await refusal(admission.admit(key, MODEL, uncounted));
    assert.equal(error.kind, 'rate_limited');
    assert.equal(error.status, 429);
    assert.equal(error.message, 'Rate limit reached: this API key is limited in requests per minute. Try again in 1 s.');
    assert.equal(error.retryAfter, '1', '500 ms rounds up to a whole second');
    assert.equal(error.type, 'requests');
    assert.equal(error.headers?.['x-ratelimit-reset-requests'], '500ms');
    assert.equal(admission.refusals.get('key rpm'), 1);
  });

  test("an account's refusal is the account's, in its message and its count", async () => {
    const { admission } = setup();
    const key = principal({ rpm: 100 }, { rpm: 1 });
    await admission.admit(key, MODEL, demand(10));
    const error = await refusal(admission.admit(key, MODEL, demand(10)));
    assert.equal(error.message, "Rate limit reached: this key's account is limited in requests per minute. Try again in 60 s.");
    assert.equal(admission.refusals.get('account rpm'), 1);
  });

  test('concurrency: a slot is held until settled; the refusal asks to come back in a second', async () => {
    const { admission } = setup();
    const key = principal({ concurrency: 1 });
    const held = await admission.admit(key, MODEL, demand(10));
    const error = await refusal(admission.admit(key, MODEL, demand(10)));
    assert.equal(error.message, 'Rate limit reached: this API key is limited in requests in flight. Try again in 1 s.');
    assert.equal(error.retryAfter, '1');
    held.settle({ tokens: 0, costUsd: 0 });
    await new Promise((resolve) => setImmediate(resolve));
    await admission.admit(key, MODEL, demand(10));
  });

  test('tpm: the prompt plus the output cap times the choices is reserved; the model’s cap bounds a larger ask', async () => {
    const { admission, counter } = setup();
    const key = principal({ tpm: 100_000 });
    const scopes: ScopeLimits[] = [{ scope: 'key:k1', rpm: 0, tpm: 100_000, concurrency: 0, budget: null }];
    await admission.admit(key, MODEL, demand(500, 3));
    assert.equal((await counter.usage(scopes))[0]!.tokens, 20 + 1_500);
    await admission.admit(key, MODEL, demand(undefined));
    assert.equal((await counter.usage(scopes))[0]!.tokens, 1_520 + 20 + 4_096, 'no cap asked: limits.default_max_output_tokens');
    await admission.admit(key, CAPPED, demand(50_000, 2));
    assert.equal((await counter.usage(scopes))[0]!.tokens, 5_636 + 20 + 2_000, "the model's max_output_tokens per choice");
  });

  test('tpm smaller than the reservation: refused for good, told to lower max_tokens, no Retry-After', async () => {
    const { admission } = setup();
    const error = await refusal(admission.admit(principal({ tpm: 100 }), MODEL, demand(200)));
    assert.equal(error.message, "This API key's tokens-per-minute limit is smaller than this request's reservation (its prompt plus its output cap); lower max_tokens.");
    assert.equal(error.retryAfter, undefined);
    assert.equal(error.type, 'tokens');
  });

  test('settling twice settles once', async () => {
    const { admission, counter } = setup();
    const key = principal({ budgetUsd: 10, budgetPeriod: 'total' });
    const admitted = await admission.admit(key, MODEL, demand(1_000));
    const scopes: ScopeLimits[] = [{ scope: 'key:k1', rpm: 0, tpm: 0, concurrency: 0, budget: { usd: 10, periodStart: 0, periodEnd: Infinity } }];
    // 20 input at $1/M and 1,000 output at $4/M.
    assert.ok(Math.abs((await counter.usage(scopes))[0]!.spentUsd! - 0.00402) < 1e-12);
    admitted.settle({ tokens: 120, costUsd: 0.0001 });
    admitted.settle({ tokens: 120, costUsd: 0.0001 });
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(Math.abs((await counter.usage(scopes))[0]!.spentUsd! - 0.0001) < 1e-12, 'the real cost, once');
  });
});

describe('the admit stage for operations that generate no tokens (embeddings, images, audio)', () => {
  const EMBEDDER = modelFromConfig(modelSchema.parse({ id: 'e', provider: 'p', endpoints: ['embeddings'], pricing: { input_per_mtok: 0.02 } }));
  const PAINTER = modelFromConfig(modelSchema.parse({ id: 'i', provider: 'p', endpoints: ['images'], pricing: { per_image: 0.04 } }));

  test('tpm reserves the input tokens alone (outputBound 0) and settles to what the upstream counted', async () => {
    const { admission, counter } = setup();
    const scopes: ScopeLimits[] = [{ scope: 'key:k1', rpm: 0, tpm: 10_000, concurrency: 0, budget: null }];
    const admitted = await admission.admit(principal({ tpm: 10_000 }), EMBEDDER, demand(0, 1, 1_234));
    assert.equal((await counter.usage(scopes))[0]!.tokens, 1_234, 'the inputs, no output cap');
    admitted.settle({ tokens: 1_300, costUsd: 0 });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await counter.usage(scopes))[0]!.tokens, 1_300);
    const error = await refusal(admission.admit(principal({ tpm: 10_000 }), EMBEDDER, demand(0, 1, 9_000)));
    assert.equal(error.type, 'tokens', 'inputs beyond what is left of the minute are refused');
    const never = await refusal(admission.admit(principal({ tpm: 10_000 }), EMBEDDER, demand(0, 1, 20_000)));
    assert.equal(never.message, "This API key's tokens-per-minute limit is smaller than this request's input tokens; send fewer or shorter inputs.");
    assert.equal(never.retryAfter, undefined);
  });

  test('what the request says it will use besides tokens is reserved against the budget at the model’s prices, and settled to the real cost', async () => {
    const { admission, counter } = setup();
    const key = principal({ budgetUsd: 1, budgetPeriod: 'total' });
    const scopes: ScopeLimits[] = [{ scope: 'key:k1', rpm: 0, tpm: 0, concurrency: 0, budget: { usd: 1, periodStart: 0, periodEnd: Infinity } }];
    const admitted = await admission.admit(key, PAINTER, { ...demand(0), units: { images: 4 } });
    assert.ok(Math.abs((await counter.usage(scopes))[0]!.spentUsd! - 0.16) < 1e-12, 'four images at $0.04 held while they are made');
    admitted.settle({ tokens: 0, costUsd: 0.08 });
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(Math.abs((await counter.usage(scopes))[0]!.spentUsd! - 0.08) < 1e-12, 'two were made');
  });

  test('images beyond the first are beyond an ordinary request, as choices are: more of them than the whole budget buys is refused up front; what they take in is not', async () => {
    const { admission, counter } = setup();
    const key = principal({ budgetUsd: 0.1, budgetPeriod: 'total' });
    const scopes: ScopeLimits[] = [{ scope: 'key:k1', rpm: 0, tpm: 0, concurrency: 0, budget: { usd: 0.1, periodStart: 0, periodEnd: Infinity } }];
    // Four images at $0.04: $0.12 beyond one image, more than the whole $0.10.
    const error = await refusal(admission.admit(key, PAINTER, { ...demand(0), units: { images: 4 } }));
    assert.equal(error.kind, 'budget_exhausted');
    assert.equal(error.message, "This request reserves $0.12 more than an ordinary request (one image), which is more than this API key's whole spend budget ($0.1). Ask for fewer images (n).");
    assert.equal(error.retryAfter, undefined, 'no period will admit it');
    assert.equal((await counter.usage(scopes))[0]!.spentUsd ?? 0, 0, 'nothing reserved');
    // Two: $0.04 beyond one, within the budget.
    const two = await admission.admit(key, PAINTER, { ...demand(0), units: { images: 2 } });
    assert.ok(Math.abs((await counter.usage(scopes))[0]!.spentUsd! - 0.08) < 1e-12);
    two.settle({ tokens: 0, costUsd: 0.08 });
    await new Promise((resolve) => setImmediate(resolve));
    // Characters to speak are input, like a prompt: an ordinary request whatever their cost, admitted while any budget is left.
    const SPEAKER = modelFromConfig(modelSchema.parse({ id: 's', provider: 'p', endpoints: ['speech'], pricing: { per_mchar: 30 } }));
    await admission.admit(key, SPEAKER, { ...demand(0), units: { characters: 4_000 } });
    assert.ok(Math.abs((await counter.usage(scopes))[0]!.spentUsd! - (0.08 + 0.12)) < 1e-12, 'its $0.12 reserved, past the budget by one request');
  });

  test('a spent budget refuses them too, whatever unit they are priced in; one with budget left is admitted at its real cost later', async () => {
    const { admission, ledger, counter } = setup();
    const key = principal({ budgetUsd: 1, budgetPeriod: 'total' });
    ledger.spent = 0.98;
    const oneImage = { ...demand(0), units: { images: 1 } };
    const admitted = await admission.admit(key, PAINTER, oneImage);
    const scopes: ScopeLimits[] = [{ scope: 'key:k1', rpm: 0, tpm: 0, concurrency: 0, budget: { usd: 1, periodStart: 0, periodEnd: Infinity } }];
    // Three images at $0.04, known only once made: the meter settles the real cost.
    admitted.settle({ tokens: 0, costUsd: 0.12 });
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(Math.abs((await counter.usage(scopes))[0]!.spentUsd! - 1.1) < 1e-12);
    for (const [model, asked] of [[PAINTER, oneImage], [EMBEDDER, demand(0)]] as const) {
      const error = await refusal(admission.admit(key, model, asked));
      assert.equal(error.kind, 'budget_exhausted', model.id);
      assert.equal(error.message, 'This API key has used its spend budget for this period. Check /app/keys.', model.id);
    }
  });
});

describe('budgets on unpriced models', () => {
  const FREE = modelFromConfig(modelSchema.parse({ id: 'free', provider: 'p', endpoints: ['chat'], pricing: { input_per_mtok: 0, output_per_mtok: 0 } }));
  const PAINTER = modelFromConfig(modelSchema.parse({ id: 'painter', provider: 'p', endpoints: ['images', 'chat'], pricing: { per_image: 0.04 } }));
  const SPEAKER = modelFromConfig(modelSchema.parse({ id: 'speaker', provider: 'p', endpoints: ['speech'], pricing: { input_per_mtok: 0.6 } }));

  test('a budgeted key is refused a model without a price for what the request is billed in, before anything is counted', async () => {
    const { admission, ledger } = setup();
    for (const [keyLimits, accountLimits, owner] of [
      [{ budgetUsd: 5 }, null, 'this API key'],
      [{ rpm: 100 }, { budgetUsd: 5 }, "this key's account"],
    ] as const) {
      const error = await refusal(admission.admit(principal(keyLimits, accountLimits), CAPPED, demand(10)));
      assert.equal(error.kind, 'model_unpriced');
      assert.equal(error.status, 403);
      assert.equal(error.param, 'model');
      assert.equal(
        error.message,
        `The model \`capped\` has no price for this request (none of input_per_mtok, output_per_mtok), and ${owner} has a spend budget, which cannot be kept on an unpriced model. Ask an operator to price it (a price of 0 makes it free).`,
      );
    }
    // A per_image price prices images, not chat; an image request names per_image among what would price it.
    assert.equal((await refusal(admission.admit(principal({ budgetUsd: 5 }), PAINTER, demand(10)))).kind, 'model_unpriced', 'chat on a model priced per image');
    await admission.admit(principal({ budgetUsd: 5 }), PAINTER, { ...demand(0), units: { images: 1 } });
    // Token prices price speech (gpt-4o-mini-tts is sold so).
    await admission.admit(principal({ budgetUsd: 5 }), SPEAKER, { ...demand(0), units: { characters: 10 } });
    assert.deepEqual(ledger.asked.map((asked) => asked.who), [{ keyId: 'k1' }], 'the refusals seeded no budget (the account was never asked); the first admitted request seeded the key\'s');
    assert.deepEqual([...admission.refusals].filter(([, count]) => count > 0), [['key unpriced', 2], ['account unpriced', 1]], 'counted by scope');
    assert.equal(admission.refusals.get('key budget'), 0, 'every reason is counted from 0');
  });

  test('a model priced at 0 is free, not unpriced; a key without a budget is not refused an unpriced model', async () => {
    const { admission } = setup();
    const free = await admission.admit(principal({ budgetUsd: 5 }), FREE, demand(10));
    free.settle({ tokens: 30, costUsd: 0 });
    const unbudgeted = await admission.admit(principal({ rpm: 100 }), CAPPED, demand(10));
    unbudgeted.settle({ tokens: 30, costUsd: 0 });
    assert.equal(await admission.admit(principal(null), CAPPED, demand(10)), UNLIMITED);
    // A token count (no choices) is billed nothing: a budgeted key may count on an unpriced model.
    const count = await admission.admit(principal({ budgetUsd: 5 }), CAPPED, demand(0, 0));
    count.settle({ tokens: 0, costUsd: 0 });
  });
});

describe('budgets and their periods', () => {
  test("a monthly budget is seeded once from the ledger's spend since the first of the month, for the key and its account", async () => {
    const { admission, ledger } = setup(Date.UTC(2026, 10, 25, 12));
    ledger.spent = 0.25;
    await admission.admit(principal({ budgetUsd: 1 }, { budgetUsd: 5, budgetPeriod: 'week' }), MODEL, demand(10));
    await admission.admit(principal({ budgetUsd: 1 }, { budgetUsd: 5, budgetPeriod: 'week' }), MODEL, demand(10));
    assert.deepEqual(ledger.asked, [
      { who: { keyId: 'k1' }, since: Date.UTC(2026, 10, 1) },
      // 2026-11-25 is a Wednesday: its week began on Monday the 23rd.
      { who: { accountId: 'acc-k1' }, since: Date.UTC(2026, 10, 23) },
    ]);
  });

  test('a spent budget refuses until the period turns; then the new period is seeded afresh and admits', async () => {
    const { admission, ledger, clock } = setup(Date.UTC(2026, 0, 31, 23, 59, 58, 500));
    ledger.spent = 1;
    const key = principal({ budgetUsd: 1, budgetPeriod: 'month' });
    const error = await refusal(admission.admit(key, MODEL, demand(10)));
    assert.equal(error.kind, 'budget_exhausted');
    assert.equal(error.status, 429);
    assert.equal(error.message, 'This API key has used its spend budget for this period. It renews in 2 s. Check /app/keys.');
    assert.equal(error.retryAfter, '2');
    clock.now = Date.UTC(2026, 1, 1);
    ledger.spent = 0;
    await admission.admit(key, MODEL, demand(10));
    assert.deepEqual(ledger.asked.map((asked) => asked.since), [Date.UTC(2026, 0, 1), Date.UTC(2026, 1, 1)]);
  });

  test("the store down while a budget must be seeded: refused as the store's failure, nothing spent blind", async () => {
    const { admission, ledger } = setup();
    ledger.failing = true;
    const error = await refusal(admission.admit(principal({ budgetUsd: 1 }), MODEL, demand(10)));
    assert.equal(error.kind, 'store_failure');
    assert.equal(error.message, 'The spend budget cannot be checked while the store is unavailable; try again shortly.');
  });

  test('counters that lose their seed again at once: given up after two seedings', async () => {
    /** Counters whose seeds never hold (a Redis restarting over and over). */
    class ForgetfulCounter extends LocalCounter {
      override async seedSpend(): Promise<void> {}
    }
    const ledger = new Ledger();
    const admission = new LimitAdmission(new ForgetfulCounter(), ledger, pino({ level: 'silent' }), SETTINGS);
    const error = await refusal(admission.admit(principal({ budgetUsd: 1 }), MODEL, demand(10)));
    assert.equal(error.kind, 'internal_error');
    assert.equal(error.message, 'The spend counters could not be prepared; try again shortly.');
    assert.equal(ledger.asked.length, 2);
  });

  test("a key's use: the rolling minute from the counters, the spend from the ledger until a request seeds it", async () => {
    const { admission, ledger, clock } = setup(Date.UTC(2026, 10, 25, 12));
    ledger.spent = 0.5;
    const limits: Limits = { rpm: 10, budgetUsd: 2, budgetPeriod: 'day' };
    const before = await admission.used({ id: 'k1', accountId: 'acc-k1', limits, accountLimits: null });
    assert.deepEqual(before, { key: { requests: 0, tokens: 0, inFlight: 0, spentUsd: 0.5, budgetResetsAt: Date.UTC(2026, 10, 26) }, account: null });
    await admission.admit(principal(limits), MODEL, demand(10));
    ledger.spent = 99;
    clock.now += 1_000;
    const after = await admission.used({ id: 'k1', accountId: 'acc-k1', limits, accountLimits: null });
    assert.equal(after.key!.requests, 1);
    assert.ok(Math.abs(after.key!.spentUsd! - (0.5 + 0.00006)) < 1e-12, 'the counter, seeded once, with the reservation (20 in, 10 out)');
  });
});

describe('limits', () => {
  test('budget periods in UTC: the day, the ISO week from Monday, the month, and all time', () => {
    const sunday = Date.UTC(2026, 10, 29, 23, 59, 59);
    assert.deepEqual(budgetWindow('day', sunday), { start: Date.UTC(2026, 10, 29), end: Date.UTC(2026, 10, 30) });
    assert.deepEqual(budgetWindow('week', sunday), { start: Date.UTC(2026, 10, 23), end: Date.UTC(2026, 10, 30) }, 'Sunday ends the week');
    assert.deepEqual(budgetWindow('week', Date.UTC(2026, 10, 30)), { start: Date.UTC(2026, 10, 30), end: Date.UTC(2026, 11, 7) }, 'Monday starts one');
    assert.deepEqual(budgetWindow('month', Date.UTC(2026, 11, 31, 12)), { start: Date.UTC(2026, 11, 1), end: Date.UTC(2027, 0, 1) }, 'December ends in the next year');
    assert.deepEqual(budgetWindow('month', Date.UTC(2028, 1, 29)), { start: Date.UTC(2028, 1, 1), end: Date.UTC(2028, 2, 1) });
    assert.deepEqual(budgetWindow('total', sunday), { start: 0, end: Number.POSITIVE_INFINITY });
  });

  test('validation: positive whole limits, a positive budget, a period only with a budget, no unknown field', () => {
    assert.ok(limitsSchema.safeParse({ rpm: 1, tpm: 2, concurrency: 3, budgetUsd: 0.5, budgetPeriod: 'day' }).success);
    for (const bad of [{ rpm: 0 }, { rpm: 1.5 }, { tpm: -1 }, { concurrency: 0 }, { budgetUsd: 0 }, { budgetUsd: Infinity }, { budgetPeriod: 'day' }, { budgetUsd: 1, budgetPeriod: 'year' }, { rmp: 5 }]) {
      assert.equal(limitsSchema.safeParse(bad).success, false, JSON.stringify(bad));
    }
    const issue = limitsSchema.safeParse({ budgetPeriod: 'week' }).error!.issues[0]!;
    assert.deepEqual([issue.path, issue.message], [['budgetPeriod'], 'a budget period needs a budget (budgetUsd)']);
  });

  test('normal form: no limits is null; a budget without a period is monthly', () => {
    assert.equal(normaliseLimits({}), null);
    assert.deepEqual(normaliseLimits({ budgetUsd: 3 }), { budgetUsd: 3, budgetPeriod: 'month' });
    assert.equal(storedLimits({}), null);
    assert.equal(storedLimits({ rpm: 5, budgetUsd: 2 }), '{"rpm":5,"budgetUsd":2,"budgetPeriod":"month"}');
    assert.deepEqual(parseStoredLimits('{"rpm":5,"budgetUsd":2,"budgetPeriod":"month"}'), { rpm: 5, budgetUsd: 2, budgetPeriod: 'month' });
    assert.equal(parseStoredLimits(null), null);
    assert.equal(parseStoredLimits('{"rpm":-1}'), null, 'a bad stored value makes no limit');
  });

  test('a stored row with a field from a newer version keeps its known limits (unknown fields are dropped)', () => {
    assert.deepEqual(parseStoredLimits('{"rpm":5,"burst":10}'), { rpm: 5 });
    assert.throws(() => limitsSchema.parse({ rpm: 5, burst: 10 }), /burst/, 'an operator setting an unknown field is still told');
  });

  test('described in one line', () => {
    assert.equal(describeLimits(null), 'none');
    assert.equal(describeLimits({ rpm: 100, tpm: 50_000, concurrency: 4, budgetUsd: 20, budgetPeriod: 'month' }), 'rpm 100, tpm 50000, concurrency 4, $20/month');
    assert.equal(describeLimits({ budgetUsd: 5, budgetPeriod: 'total' }), '$5 in total');
  });
});
