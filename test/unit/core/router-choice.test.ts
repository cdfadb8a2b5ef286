/**
 * Which deployment the router picks: weights, priority levels, and the least-busy and latency
 * strategies, with the router's random draws supplied by the test.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { catalogueOf, RouterHarness } from './router-harness.js';

const MODELS = `
  - { id: weighted, deployments: [{ provider: a, weight: 3 }, { provider: b, weight: 1 }], routing: { strategy: weighted } }
  - { id: levels, deployments: [{ provider: a, priority: 0 }, { provider: b, priority: 1 }, { provider: c, priority: 1 }], routing: { strategy: weighted, circuit: { failures: 1 } } }
  - { id: busy, deployments: [{ provider: a, weight: 9 }, { provider: b, weight: 1 }], routing: { strategy: least_busy } }
  - { id: fast, deployments: [{ provider: a }, { provider: b }, { provider: c }], routing: { strategy: latency } }
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
    const model = h.model('weighted');
    const pick = (draw: number) => {
      h.random = () => draw;
      return h.router.preferred(model).providerId;
    };
    assert.deepEqual([0, 0.5, 0.7499, 0.75, 0.9999].map(pick), ['a', 'a', 'a', 'b', 'b']);
  });

  test('with the default Math.random, 20,000 picks split 3:1 within ten standard deviations', () => {
    // Binomial(20000, 0.75): sd ≈ 61, so ±600 is about 10 sd; a flake would take odds of 1e-20.
    harness = new RouterHarness(catalogueOf(MODELS), Math.random);
    const model = harness.model('weighted');
    let first = 0;
    for (let i = 0; i < 20_000; i++) if (harness.router.preferred(model).providerId === 'a') first++;
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
