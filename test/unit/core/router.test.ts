/**
 * The router on virtual time, over scripted upstreams: which deployment it picks (weights, priority
 * levels, the least-busy and latency strategies, with its random draws supplied by the test); when
 * it makes another attempt and when it does not (which upstream failures fail over and which count
 * against the deployment's circuit, the request's deadline and a stream's first-token timeout,
 * streams that fail before and after their first content, relayed streams, fallback models, the
 * caller leaving); and what counts as a stream's first content.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { GatewayError } from '../../../src/core/errors.js';
import type { StreamPart } from '../../../src/generation/model.js';
import type { WireOperation } from '../../../src/generation/provider.js';
import { holdUntilContent, isContentPart } from '../../../src/routing/first-content.js';
import { relayFormat } from '../../../src/wire/relay-format.js';
import { catalogueOf, RouterHarness, type Outcome } from './router-harness.js';
import { textStream } from './scripted-provider.js';

/** Whether routing holds a relayed stream past `event`: its wire's first content. */
const isRelayedContent = (operation: WireOperation, event: Readonly<Record<string, unknown>>): boolean => relayFormat(operation).isContent(event);
/** The failure routing throws for `event` read before a relayed stream's first content, if it is one. */
const relayedFailure = (operation: WireOperation, event: Readonly<Record<string, unknown>>, providerId: string) => relayFormat(operation).failureIn?.(event, providerId);

const MODELS = `
  - { id: weighted, deployments: [{ provider: a, weight: 3 }, { provider: b, weight: 1 }], routing: { strategy: weighted } }
  - { id: levels, deployments: [{ provider: a, priority: 0 }, { provider: b, priority: 1 }, { provider: c, priority: 1 }], routing: { strategy: weighted, circuit: { failures: 1 } } }
  - { id: busy, deployments: [{ provider: a, weight: 9 }, { provider: b, weight: 1 }], routing: { strategy: least_busy } }
  - { id: fast, deployments: [{ provider: a }, { provider: b }, { provider: c }], routing: { strategy: latency } }
  - id: pair
    deployments: [{ provider: a }, { provider: b, priority: 1 }]
    routing: { strategy: weighted, circuit: { failures: 100 } }
  - id: strict
    deployments: [{ provider: a }, { provider: b, priority: 1 }]
    routing: { strategy: weighted, retry_on: [503, timeout] }
  - id: timed
    deployments: [{ provider: a }, { provider: b, priority: 1 }]
    routing: { strategy: weighted, deadline_ms: 1000, first_token_timeout_ms: 300 }
  - id: short
    deployments: [{ provider: a }, { provider: b, priority: 1 }]
    routing: { strategy: weighted, deadline_ms: 200, first_token_timeout_ms: 300 }
  - { id: primary, provider: a, fallbacks: [secondary], routing: { retries: 0 } }
  - { id: secondary, provider: b }
  - id: orphan-first
    deployments: [{ provider: e }, { provider: a, priority: 1 }]
  - id: orphan-later
    deployments: [{ provider: a }, { provider: e, priority: 1 }]
    routing: { retries: 1 }
`;

let harness: RouterHarness | undefined;
afterEach(() => harness?.time.uninstall());

function setup(random?: () => number): RouterHarness {
  harness = new RouterHarness(catalogueOf(MODELS), random);
  harness.time.install();
  return harness;
}

function count(names: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

/** Draws spread evenly over [0, 1): every share of the weights is hit exactly in proportion. */
function evenDraws(total: number): () => number {
  let i = 0;
  return () => (i++ % total) / total;
}

describe('the weighted strategy', () => {
  test('draws spread evenly over [0, 1) send exactly 3 requests in 4 to the deployment of weight 3', async () => {
    const h = setup(evenDraws(200));
    const served = await h.servedBy('weighted', 200);
    assert.deepEqual(count(served), { a: 150, b: 50 });
    assert.equal(h.draws, 200, 'one draw per request');
  });

  test('the draw falls on the weight boundary: below 3/4 is the first deployment, from 3/4 on the second', async () => {
    const h = setup();
    const pick = (draw: number) => {
      h.random = () => draw;
      return h.firstPick('weighted');
    };
    const picked: string[] = [];
    for (const draw of [0, 0.5, 0.7499, 0.75, 0.9999]) picked.push(await pick(draw));
    assert.deepEqual(picked, ['a', 'a', 'a', 'b', 'b']);
  });

  test('with the default Math.random, 20,000 picks split 3:1 within ten standard deviations', async () => {
    // Binomial(20000, 0.75): sd ≈ 61, so ±600 is about 10 sd; a flake would take odds of 1e-20.
    harness = new RouterHarness(catalogueOf(MODELS), Math.random);
    let first = 0;
    for (let i = 0; i < 20_000; i++) if ((await harness.firstPick('weighted')) === 'a') first++;
    assert.ok(Math.abs(first - 15_000) < 600, `a was picked ${first} times of 20000`);
  });
});

describe('priority levels', () => {
  test('a higher level takes no traffic while the first level is available', async () => {
    const h = setup(evenDraws(10));
    assert.deepEqual(count(await h.servedBy('levels', 10)), { a: 10 });
  });

  test("once the first level's only deployment is out, the next level's deployments share the traffic by weight", async () => {
    const h = setup(evenDraws(10));
    // One failure opens a's circuit (failures: 1); its request is answered by the next level.
    h.script('a', { fail: h.providers.a.httpError(500) });
    const first = await h.send('levels');
    assert.equal(first.servedBy, 'b');
    assert.deepEqual(h.states('levels'), ['a open', 'b up', 'c up']);
    assert.deepEqual(count(await h.servedBy('levels', 10)), { b: 5, c: 5 });
    assert.equal(h.providers.a.calls.length, 1, 'the open deployment is not asked again');
  });
});

describe('the least-busy strategy', () => {
  test('a request goes to the deployment with fewer requests in flight, whatever the weights', async () => {
    const h = setup(() => 0);
    h.script('a', { answer: 'slow', after: 1000 });
    const first = h.start('busy');
    await h.time.advance(0);
    assert.equal(h.providers.a.inFlight, 1, 'the first request is in flight on a (weight 9 of 10, draw 0)');
    const second = await h.send('busy', {}, 500);
    assert.equal(second.servedBy, 'b', 'the idle deployment takes the next one');
    assert.equal((await h.settled(first.outcome)).servedBy, 'a');
    assert.equal((await h.send('busy')).servedBy, 'a', 'both idle again: the weights decide');
  });
});

describe('the latency strategy', () => {
  test('of the two drawn, the faster deployment is picked; the slowest of three is never picked once measured', async () => {
    const draws = evenDraws(7);
    const h = setup(draws);
    // Each is measured once: unmeasured ones are tried first (their cost counts as 0).
    h.script('a', { answer: 'slow', after: 900 });
    h.script('b', { answer: 'quick', after: 100 });
    h.script('c', { answer: 'quicker', after: 50 });
    const measured = new Set<string>();
    for (let i = 0; i < 3; i++) measured.add((await h.send('fast')).servedBy!);
    assert.deepEqual([...measured].sort(), ['a', 'b', 'c'], 'each unmeasured deployment was tried');
    h.providers.a.otherwise = { answer: 'slow', after: 900 };
    h.providers.b.otherwise = { answer: 'quick', after: 100 };
    h.providers.c.otherwise = { answer: 'quicker', after: 50 };
    const served = count(await h.servedBy('fast', 42));
    assert.equal(served.a, undefined, `the slowest is never picked: ${JSON.stringify(served)}`);
    assert.ok((served.c ?? 0) > (served.b ?? 0), `the fastest wins every pair it is drawn in: ${JSON.stringify(served)}`);
    // A minute later a's average is forgotten: unmeasured again, it is tried when drawn.
    await h.time.advance(60_001);
    const later = await h.servedBy('fast', 3);
    assert.ok(later.includes('a'), `the slow one is tried again: ${later.join(', ')}`);
  });

  test('requests in flight multiply a deployment’s latency: a fast one that is busy loses to a slower idle one', async () => {
    const h = setup(() => 0);
    h.script('a', { answer: 'measured', after: 100 });
    h.script('b', { answer: 'measured', after: 300 });
    h.script('c', { answer: 'measured', after: 300 });
    for (let i = 0; i < 3; i++) await h.send('fast');
    // a (100 ms) takes three long requests at once: 100 × 4 in flight beats neither b nor c (300 × 1).
    h.providers.a.otherwise = { answer: 'long', after: 10_000 };
    const long = [h.start('fast'), h.start('fast'), h.start('fast')];
    await h.time.advance(0);
    assert.equal(h.providers.a.inFlight, 3, 'the first three all went to the fastest');
    assert.equal((await h.send('fast', {}, 5000)).servedBy, 'b', 'with three in flight a costs 400, b 300');
    for (const { outcome } of long) await h.settled(outcome);
  });
});

const texts = (outcome: Outcome) => outcome.delivered.flatMap((part) => ((part as StreamPart).type === 'text' ? [(part as Extract<StreamPart, { type: 'text' }>).text] : []));

describe('which failures fail over', () => {
  // [what the first deployment did, is another attempt made, does its circuit count it]
  const cases: [string, (h: RouterHarness) => GatewayError, boolean, boolean][] = [
    ['429', (h) => h.providers.a.httpError(429), true, true],
    ['500', (h) => h.providers.a.httpError(500), true, true],
    ['502', (h) => h.providers.a.httpError(502), true, true],
    ['503', (h) => h.providers.a.httpError(503), true, true],
    ['504', (h) => h.providers.a.httpError(504), true, true],
    ['529', (h) => h.providers.a.httpError(529), true, true],
    ['a refused connection', (h) => h.providers.a.connectError(), true, true],
    ['400 (the request is at fault)', (h) => h.providers.a.httpError(400), false, false],
    ['404 (a model the upstream lacks)', (h) => h.providers.a.httpError(404, undefined, 'The model `pair` does not exist.'), false, false],
    ['404 for the path Sluice built (its base_url is wrong: a 502)', (h) => h.providers.a.httpError(404), true, true],
    ['422', (h) => h.providers.a.httpError(422), false, false],
    ['401 (our credential)', (h) => h.providers.a.httpError(401), false, true],
    ['403', (h) => h.providers.a.httpError(403), false, true],
    ['408', (h) => h.providers.a.httpError(408), false, true],
    ['501 (not in retry_on)', (h) => h.providers.a.httpError(501), false, true],
  ];
  for (const [what, failure, failsOver, counted] of cases) {
    test(`${what}: ${failsOver ? 'the next deployment answers' : 'the failure goes back at once'}; the circuit ${counted ? 'counts' : 'ignores'} it`, async () => {
      const h = setup();
      const error = failure(h);
      h.script('a', { fail: error });
      const outcome = await h.send('pair');
      if (failsOver) {
        assert.equal(outcome.error, undefined);
        assert.equal(outcome.servedBy, 'b');
        assert.deepEqual(outcome.route.attempts.map((attempt) => [attempt.deployment, attempt.status, attempt.errorKind]), [['a/pair', error.status, error.kind], ['b/pair', 200, null]]);
      } else {
        assert.equal(outcome.error, error, 'the upstream failure itself is thrown');
        assert.equal(h.providers.b.calls.length, 0, 'no other deployment is asked');
        assert.equal(outcome.route.attempts.length, 1);
      }
      assert.equal(h.states('pair')[0], counted ? 'a degraded' : 'a up');
    });
  }

  test("a bug in an adapter (anything but a GatewayError) is our own 500, never retried nor held against the deployment", async () => {
    const h = setup();
    h.script('a', { fail: new TypeError('undefined is not a function') as unknown as GatewayError });
    const outcome = await h.send('pair');
    assert.equal(outcome.error?.kind, 'internal_error');
    assert.equal(outcome.error?.message, 'The gateway failed to handle this request.', 'its own message stays inside');
    assert.equal(h.providers.b.calls.length, 0);
    assert.equal(h.states('pair')[0], 'a up');
  });

  test('retry_on decides what is retried: 503 is, 500 is not (and still counts against the circuit)', async () => {
    const h = setup();
    h.script('a', { fail: h.providers.a.httpError(503) });
    assert.equal((await h.send('strict')).servedBy, 'b');
    h.script('a', { fail: h.providers.a.httpError(500) });
    const refused = await h.send('strict');
    assert.equal(refused.error?.status, 502);
    assert.equal(h.providers.b.calls.length, 1, 'the 500 was not retried');
    assert.equal(h.states('strict')[0], 'a degraded');
  });

  test('a deployment whose provider has no adapter: the first attempt says so; after another failed it is passed over', async () => {
    const h = setup();
    const first = await h.send('orphan-first');
    assert.equal(first.error?.kind, 'internal_error');
    assert.match(first.error!.message, /The provider 'e' of model `orphan-first` is not configured\./);
    h.providers.a.otherwise = { fail: h.providers.a.httpError(503) };
    const later = await h.send('orphan-later');
    assert.equal(later.error?.kind, 'upstream_overloaded', "the upstream's failure, not the missing adapter, goes back");
    assert.deepEqual(later.route.attempts.map((attempt) => attempt.deployment), ['a/orphan-later'], 'the passed-over deployment made no attempt');
  });
});

describe('deadlines', () => {
  test("a whole answer not back by deadline_ms: the attempt is aborted then, and nothing follows", async () => {
    const h = setup();
    h.script('a', 'hang');
    const started = h.time.now;
    const outcome = await h.send('timed');
    assert.equal(outcome.error?.kind, 'upstream_timeout');
    assert.equal(outcome.error?.message, 'No answer from model `timed` within the routing deadline of 1000 ms.');
    assert.equal(h.time.now - started, 1000);
    assert.ok(h.providers.a.calls[0]!.signal.aborted, "the upstream call's signal was aborted");
    assert.equal(h.providers.b.calls.length, 0, 'no attempt after the deadline');
    assert.equal(h.states('timed')[0], 'a up', "the request's own deadline says nothing about the deployment");
  });

  test('deadline_ms bounds every attempt together: the second is cut at the first one’s start + deadline', async () => {
    const h = setup();
    h.script('a', { fail: h.providers.a.httpError(503), after: 600 });
    h.script('b', 'hang');
    const started = h.time.now;
    const outcome = await h.send('timed');
    assert.equal(outcome.error?.kind, 'upstream_timeout');
    assert.equal(h.providers.b.calls[0]!.at - started, 600);
    assert.equal(h.time.now - started, 1000, 'not 600 + 1000');
  });

  test('a whole answer is not held to first_token_timeout_ms, only to the deadline', async () => {
    const h = setup();
    h.script('a', { answer: 'slow but in time', after: 800 });
    const outcome = await h.send('timed');
    assert.equal(outcome.error, undefined);
    assert.equal(outcome.servedBy, 'a');
  });

  test("a stream with no first content within first_token_timeout_ms is abandoned then, counted against the deployment, and retried", async () => {
    const h = setup();
    h.script('a', { stream: [{ type: 'start', id: 'a-1', created: 1 }, 'hang'] });
    h.script('b', { stream: textStream('from b') });
    const started = h.time.now;
    const outcome = await h.send('timed', { stream: true });
    assert.equal(outcome.servedBy, 'b');
    assert.equal(h.providers.b.calls[0]!.at - started, 300, 'retried at the first-token timeout');
    assert.ok(h.providers.a.calls[0]!.signal.aborted);
    assert.deepEqual(texts(outcome), ['from b #0']);
    assert.deepEqual(outcome.route.attempts[0]!.errorKind, 'upstream_timeout');
    assert.equal(h.states('timed')[0], 'a degraded', 'a stall is the deployment’s fault');
  });

  test('the wait for a stream’s headers counts towards its first-token timeout', async () => {
    const h = setup();
    h.script('a', { answer: 'late headers', after: 350 });
    const outcome = await h.send('timed', { stream: true });
    assert.equal(outcome.servedBy, 'b');
    assert.equal(h.providers.b.calls[0]!.at - h.providers.a.calls[0]!.at, 300);
  });

  test('when the deadline comes before the first-token timeout, the stream is cut at the deadline, as the deadline', async () => {
    const h = setup();
    h.script('a', { stream: ['hang'] });
    const outcome = await h.send('short', { stream: true });
    assert.equal(outcome.error?.message, 'No answer from model `short` within the routing deadline of 200 ms.');
    assert.equal(h.providers.b.calls.length, 0);
  });

  test('once its first content came, a stream is cut by neither timer: a slow drip runs past both', async () => {
    const h = setup();
    h.script('a', { stream: [{ type: 'start', id: 'a-1', created: 1 }, { wait: 100 }, { type: 'text', choice: 0, text: 'first' }, { wait: 5_000 }, { type: 'text', choice: 0, text: 'second' }, { type: 'finish', choice: 0, finish: { reason: 'stop', raw: 'stop' } }] });
    const started = h.time.now;
    const outcome = await h.send('timed', { stream: true });
    assert.equal(outcome.error, undefined);
    assert.equal(outcome.failure, null);
    assert.deepEqual(texts(outcome), ['first', 'second']);
    assert.equal(h.time.now - started, 5_100);
  });
});

describe('streams that fail', () => {
  test('before their first content: retried, and the caller sees only the stream that answered', async () => {
    const h = setup();
    h.script('a', { stream: [{ type: 'start', id: 'a-1', created: 1 }, { type: 'usage', usage: { input: 1, output: 0, cachedInput: 0, cacheWrite: 0, reasoning: 0 } }, { fail: h.providers.a.httpError(502) }] });
    h.script('b', { stream: textStream('from b') });
    const outcome = await h.send('pair', { stream: true });
    assert.equal(outcome.error, undefined);
    assert.equal(outcome.servedBy, 'b');
    assert.deepEqual(outcome.delivered, textStream('from b'), "not one of a's parts");
    assert.equal(outcome.sink.header('x-sluice-attempts'), '2');
  });

  test('before their first content, with a failure not to retry: a proper error status, nothing sent', async () => {
    const h = setup();
    h.script('a', { stream: [{ type: 'start', id: 'a-1', created: 1 }, { fail: h.providers.a.httpError(400) }] });
    const outcome = await h.send('pair', { stream: true });
    assert.equal(outcome.error?.status, 400);
    assert.equal(outcome.sink.started, false);
    assert.equal(h.providers.b.calls.length, 0);
  });

  test('after their first content: no other attempt; the failure is the request’s outcome and counts against the deployment', async () => {
    const h = setup();
    h.script('a', { stream: [{ type: 'start', id: 'a-1', created: 1 }, { type: 'text', choice: 0, text: 'partial' }, { fail: h.providers.a.httpError(502) }] });
    const outcome = await h.send('pair', { stream: true });
    assert.equal(outcome.error, undefined, 'the answer had begun: the error went to the caller in the stream');
    assert.deepEqual(texts(outcome), ['partial']);
    assert.deepEqual(outcome.failure, { status: 502, kind: 'upstream_error', upstreamFailure: 502 });
    assert.equal(h.providers.b.calls.length, 0, 'never a second answer after the first began');
    assert.deepEqual(outcome.route.attempts.map((attempt) => [attempt.status, attempt.errorKind]), [[502, 'upstream_error']]);
    assert.equal(h.states('pair')[0], 'a degraded');
  });

  const choicesOf = (outcome: Outcome) => outcome.delivered.filter((part) => (part as StreamPart).type === 'text').map((part) => (part as Extract<StreamPart, { type: 'text' }>).choice);

  test('a fanned-out stream (n: 3, one choice per call) whose second call is refused: the whole attempt is retried', async () => {
    const h = setup();
    h.script('a', { stream: textStream('a', 1) }, { fail: h.providers.a.httpError(503) }, { stream: textStream('a', 1) });
    const outcome = await h.send('pair', { stream: true, n: 3 });
    assert.equal(outcome.servedBy, 'b');
    assert.equal(h.providers.b.calls.length, 3, 'b makes the three calls');
    assert.deepEqual(texts(outcome), ['answer from b #0', 'answer from b #0', 'answer from b #0']);
    assert.deepEqual(choicesOf(outcome), [0, 1, 2], 'each call’s choice placed at its own index');
    assert.ok(h.providers.a.calls.every((call) => call.signal.aborted), "a's accepted calls were stopped");
  });

  test('a fanned-out stream whose second call breaks before any call sent content: retried', async () => {
    const h = setup();
    const slow = [{ type: 'start' as const, id: 'a-1', created: 1 }, { wait: 100 }, ...textStream('a', 1).slice(1)];
    h.script('a', { stream: slow }, { stream: [{ fail: h.providers.a.connectError() }] }, { stream: slow });
    const outcome = await h.send('pair', { stream: true, n: 3 });
    assert.equal(outcome.servedBy, 'b');
    assert.deepEqual(choicesOf(outcome), [0, 1, 2]);
  });

  test('a fanned-out stream whose second call breaks after the first call’s content went out: an error in the stream, no retry', async () => {
    const h = setup();
    h.script('a', { stream: textStream('a', 1) }, { stream: [{ type: 'start', id: 'a-2', created: 1 }, { wait: 10 }, { fail: h.providers.a.connectError() }] }, { stream: textStream('a', 1) });
    const outcome = await h.send('pair', { stream: true, n: 3 });
    assert.equal(outcome.error, undefined);
    assert.equal(outcome.failure?.kind, 'upstream_unreachable');
    assert.equal(h.providers.b.calls.length, 0);
    assert.ok(h.providers.a.calls.every((call) => call.signal.aborted), 'the other calls were stopped');
  });

  test("a relayed Responses stream that reports response.failed before any content is retried", async () => {
    const h = setup();
    h.script('a', { events: [{ type: 'response.created' }, { type: 'response.in_progress' }, { type: 'response.failed', response: { error: { message: 'secret upstream words' } } }] });
    h.script('b', { events: [{ type: 'response.created' }, { type: 'response.output_text.delta', delta: 'hi' }, { type: 'response.completed' }] });
    const outcome = await h.send('pair', { stream: true, relay: 'openai.responses' });
    assert.equal(outcome.servedBy, 'b');
    assert.deepEqual(outcome.delivered.map((event) => (event as { type: string }).type), ['response.created', 'response.output_text.delta', 'response.completed']);
    assert.equal(outcome.route.attempts[0]!.errorKind, 'upstream_error');
  });

  test('a relayed stream that breaks once its first content went out: not retried, the caller already has its 200', async () => {
    const h = setup();
    const broken = h.providers.a.connectError();
    h.script('a', { events: [{ type: 'response.created' }, { type: 'response.output_text.delta', delta: 'Hel' }, { fail: broken }] });
    const outcome = await h.send('pair', { stream: true, relay: 'openai.responses' });
    assert.equal(outcome.error, broken);
    assert.equal(outcome.sink.started, true);
    assert.equal(h.providers.b.calls.length, 0);
  });

  test('a relayed Anthropic stream that breaks after message_start, before any content block delta, is retried', async () => {
    const h = setup();
    h.script('a', { events: [{ type: 'message_start', message: {} }, { type: 'content_block_start', index: 0 }, { fail: h.providers.a.connectError() }] });
    h.script('b', { events: [{ type: 'message_start', message: {} }, { type: 'content_block_delta', delta: { text: 'hi' } }, { type: 'message_stop' }] });
    const outcome = await h.send('pair', { stream: true, relay: 'anthropic.messages' });
    assert.equal(outcome.servedBy, 'b');
    assert.equal(outcome.delivered.length, 3);
  });
});

describe('fallback models', () => {
  test('when every deployment failed, the fallback answers; the attempts name both models', async () => {
    const h = setup();
    h.script('a', { fail: h.providers.a.httpError(503) });
    const outcome = await h.send('primary');
    assert.equal(outcome.servedBy, 'b');
    assert.equal(outcome.route.served?.id, 'secondary');
    assert.deepEqual(outcome.route.attempts.map((attempt) => attempt.model), ['primary', 'secondary']);
  });

  test('a failure that is not retried does not reach the fallback', async () => {
    const h = setup();
    h.script('a', { fail: h.providers.a.httpError(400) });
    const outcome = await h.send('primary');
    assert.equal(outcome.error?.status, 400);
    assert.equal(h.providers.b.calls.length, 0);
  });
});

describe('the caller leaving', () => {
  test('cancels the attempt in flight, which is recorded as 499 and held against no one; nothing follows', async () => {
    const h = setup();
    h.script('a', 'hang');
    const { outcome, leave } = h.start('pair');
    await h.time.advance(100);
    leave();
    const ended = await h.settled(outcome);
    assert.ok(h.providers.a.calls[0]!.signal.aborted);
    assert.deepEqual(ended.route.attempts.map((attempt) => [attempt.status, attempt.errorKind]), [[499, 'client_closed']]);
    assert.equal(h.providers.b.calls.length, 0);
    assert.equal(h.states('pair')[0], 'a up');
  });
});

describe('what counts as first content', () => {
  test('of the generation model: anything but the start and the usage', () => {
    const parts: [StreamPart, boolean][] = [
      [{ type: 'start', id: 's', created: 1 }, false],
      [{ type: 'usage', usage: { input: 1, output: 0, cachedInput: 0, cacheWrite: 0, reasoning: 0 } }, false],
      [{ type: 'text', choice: 0, text: '' }, true],
      [{ type: 'reasoning', choice: 0, text: 'hm' }, true],
      [{ type: 'tool_call_start', choice: 0, index: 0, id: 't', name: 'f' }, true],
      [{ type: 'finish', choice: 0, finish: { reason: 'stop', raw: 'stop' } }, true],
    ];
    for (const [part, content] of parts) assert.equal(isContentPart(part), content, part.type);
  });

  // [operation, event, is it content]
  const events: [WireOperation, Record<string, unknown>, boolean][] = [
    ['openai.chat', { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }, false],
    ['openai.chat', { choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [] }, finish_reason: null }] }, false],
    ['openai.chat', { choices: [], usage: { prompt_tokens: 1 } }, false],
    ['openai.chat', { choices: [{ index: 0, delta: { content: 'Hi' } }] }, true],
    ['openai.chat', { choices: [{ index: 0, delta: { refusal: 'No.' } }] }, true],
    ['openai.chat', { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 't' }] } }] }, true],
    ['openai.chat', { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }, true],
    ['openai.completions', { choices: [{ index: 0, text: '' }] }, false],
    ['openai.completions', { choices: [{ index: 0, text: 'Hi' }] }, true],
    ['openai.completions', { choices: [{ index: 0, text: '', finish_reason: 'length' }] }, true],
    ['openai.responses', { type: 'response.created' }, false],
    ['openai.responses', { type: 'response.in_progress' }, false],
    ['openai.responses', { type: 'response.output_item.added' }, false],
    ['openai.responses', { type: 'response.output_text.delta', delta: 'Hi' }, true],
    ['openai.responses', { type: 'response.output_item.done' }, true],
    ['openai.responses', { type: 'response.completed' }, true],
    ['openai.responses', { type: 'response.incomplete' }, true],
    ['anthropic.messages', { type: 'message_start', message: {} }, false],
    ['anthropic.messages', { type: 'content_block_start', index: 0 }, false],
    ['anthropic.messages', { type: 'ping' }, false],
    ['anthropic.messages', { type: 'content_block_delta', delta: {} }, true],
    ['anthropic.messages', { type: 'message_delta', delta: { stop_reason: 'end_turn' } }, true],
    ['anthropic.messages', { type: 'message_stop' }, true],
    ['gemini.generateContent', { candidates: [{ content: { parts: [] } }] }, false],
    ['gemini.generateContent', { usageMetadata: { promptTokenCount: 3 } }, false],
    ['gemini.generateContent', { candidates: [{ content: { parts: [{ text: 'Hi' }] } }] }, true],
    ['gemini.generateContent', { candidates: [{ finishReason: 'STOP' }] }, true],
  ];
  test('of relayed streams, operation by operation', () => {
    for (const [operation, event, content] of events) assert.equal(isRelayedContent(operation, event), content, `${operation} ${JSON.stringify(event)}`);
  });

  test("a relayed Responses stream's failure events before the content are thrown, in Sluice's words only", () => {
    for (const type of ['response.failed', 'error']) {
      const failure = relayedFailure('openai.responses', { type, message: 'upstream secret' }, 'a');
      assert.equal(failure?.upstreamFailure, 500, type);
      assert.equal(failure?.message, "The upstream provider 'a' failed before its answer began.");
    }
    assert.equal(relayedFailure('openai.chat', { type: 'error' }, 'a'), undefined, 'only the Responses API has failure events');
    assert.equal(relayedFailure('openai.responses', { type: 'response.output_text.delta' }, 'a'), undefined);
  });

  test('holding a stream: what was read is replayed, then the rest; a source that ends first is given back whole', async () => {
    async function* source(items: string[]) {
      yield* items;
    }
    const collect = async (iterable: AsyncIterable<string>) => {
      const out: string[] = [];
      for await (const item of iterable) out.push(item);
      return out;
    };
    assert.deepEqual(await collect(await holdUntilContent(source(['role', 'text', 'more']), (item) => item === 'text')), ['role', 'text', 'more']);
    assert.deepEqual(await collect(await holdUntilContent(source(['role', 'end?']), () => false)), ['role', 'end?']);
    let closed = false;
    const failing = (async function* () {
      try {
        yield 'role';
        yield 'bad';
        yield 'text';
      } finally {
        closed = true;
      }
    })();
    const error = new GatewayError('upstream_error', 'no', { upstreamFailure: 500 });
    await assert.rejects(holdUntilContent(failing, (item) => item === 'text', (item) => (item === 'bad' ? error : undefined)), (thrown) => thrown === error);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(closed, 'the source is closed');
  });
});
