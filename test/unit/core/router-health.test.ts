/**
 * A deployment's health as the router keeps it, on virtual time: the circuit (open, one trial,
 * closed again), the backoff before a deployment is tried again, and the cooling an upstream's
 * `Retry-After` asks for, in seconds and as an HTTP date; then one deployment's health on its own
 * (the decaying latency average, the failure penalty, the circuit's states, cooling).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { resolveRouting } from '../../../src/config/config-file.js';
import { DeploymentHealth, HealthBoard } from '../../../src/routing/deployment-health.js';
import { catalogueOf, RouterHarness } from './router-harness.js';

const MODELS = `
  - id: circuit
    deployments: [{ provider: a }, { provider: b, priority: 1 }]
    routing: { strategy: weighted, circuit: { failures: 3, window_ms: 10000, cooldown_ms: 5000 } }
  - { id: lone, provider: a, routing: { retries: 4, backoff_ms: { initial: 100, max: 1000 } } }
  - { id: capped, provider: a, routing: { retries: 4, backoff_ms: { initial: 100, max: 250 } } }
  - { id: once, provider: a, routing: { retries: 0 } }
  - id: cools
    deployments: [{ provider: a }, { provider: b, priority: 1 }]
    routing: { strategy: weighted, retry_after_max_ms: 20000 }
  - id: even
    deployments: [{ provider: a, weight: 1 }, { provider: b, weight: 999 }]
    routing: { strategy: weighted, retries: 0, circuit: { failures: 1, cooldown_ms: 5000 } }
  - id: both
    deployments: [{ provider: a }, { provider: b }]
    routing: { strategy: weighted, retries: 0, circuit: { failures: 1, cooldown_ms: 60000 } }
  - { id: waits, provider: a, routing: { retries: 1, backoff_ms: { initial: 100, max: 5000 } } }
`;

let harness: RouterHarness | undefined;
afterEach(() => harness?.time.uninstall());

function setup(random: () => number = () => 0): RouterHarness {
  harness = new RouterHarness(catalogueOf(MODELS), random);
  harness.time.install();
  return harness;
}

describe('the circuit', () => {
  test('opens after `failures` failures within the window; the deployment is then not asked at all', async () => {
    const h = setup();
    h.providers.a.otherwise = { fail: h.providers.a.httpError(500) };
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(h.states('circuit')[0], i === 0 ? 'a up' : 'a degraded');
      const outcome = await h.send('circuit');
      assert.equal(outcome.servedBy, 'b', `request ${i} is answered by the next level`);
      assert.equal(outcome.sink.header('x-sluice-attempts'), '2');
    }
    assert.deepEqual(h.states('circuit'), ['a open', 'b up']);
    const outcome = await h.send('circuit');
    assert.equal(outcome.servedBy, 'b');
    assert.equal(outcome.sink.header('x-sluice-attempts'), undefined, 'one attempt: the open deployment was skipped');
    assert.equal(h.providers.a.calls.length, 3);
  });

  test('failures further apart than the window do not add up', async () => {
    const h = setup();
    h.providers.a.otherwise = { fail: h.providers.a.httpError(503) };
    await h.send('circuit');
    await h.send('circuit');
    await h.time.advance(10_000);
    assert.deepEqual(h.states('circuit')[0], 'a up', 'both failures left the window');
    await h.send('circuit');
    assert.deepEqual(h.states('circuit')[0], 'a degraded', 'one failure in the window: degraded, not open');
    await h.send('circuit');
    assert.equal(h.providers.a.calls.length, 4, 'still asked');
  });

  test('after the cooldown one trial is let through; its success closes the circuit and the deployment takes its traffic again', async () => {
    const h = setup();
    h.script('a', ...Array.from({ length: 3 }, () => ({ fail: h.providers.a.httpError(500) })));
    for (let i = 0; i < 3; i++) await h.send('circuit');
    await h.time.advance(4_999);
    assert.equal((await h.send('circuit')).servedBy, 'b', 'still open 1 ms before the cooldown ends');
    await h.time.advance(1);
    assert.equal((await h.send('circuit')).servedBy, 'a', 'the trial');
    assert.deepEqual(h.states('circuit'), ['a up', 'b up'], 'closed, its failures forgotten');
    assert.equal((await h.send('circuit')).servedBy, 'a');
  });

  test('a failed trial opens the circuit again at once, for another cooldown', async () => {
    const h = setup();
    h.providers.a.otherwise = { fail: h.providers.a.httpError(502) };
    for (let i = 0; i < 3; i++) await h.send('circuit');
    await h.time.advance(15_000);
    // Every earlier failure has left the window: the trial's failure alone reopens it.
    const trial = await h.send('circuit');
    assert.equal(trial.servedBy, 'b');
    assert.equal(h.providers.a.calls.length, 4, 'the trial was made');
    assert.deepEqual(h.states('circuit')[0], 'a open');
    await h.time.advance(4_999);
    await h.send('circuit');
    assert.equal(h.providers.a.calls.length, 4, 'not asked during the new cooldown');
    await h.time.advance(1);
    await h.send('circuit');
    assert.equal(h.providers.a.calls.length, 5, 'the next trial');
  });

  test('a circuit due its trial gets the next request, whatever the strategy would have drawn', async () => {
    const h = setup(() => 0);
    h.script('a', { fail: h.providers.a.httpError(500) });
    assert.equal((await h.send('even')).error?.kind, 'upstream_error', 'the draw of 0 picked a, which failed: open');
    h.random = () => 0.5;
    assert.equal((await h.send('even')).servedBy, 'b', 'the draw of 0.5 picks b (weight 999 of 1000)');
    await h.time.advance(5_000);
    assert.equal((await h.send('even')).servedBy, 'a', 'the trial, though the same draw would pick b');
  });

  test('while the trial is in flight (half open) no other request goes to the deployment', async () => {
    const h = setup();
    h.script('a', ...Array.from({ length: 3 }, () => ({ fail: h.providers.a.httpError(500) })), { answer: 'trial', after: 2_000 });
    for (let i = 0; i < 3; i++) await h.send('circuit');
    await h.time.advance(5_000);
    const trial = h.start('circuit');
    await h.time.advance(0);
    assert.equal(h.providers.a.inFlight, 1, 'the trial is in flight');
    assert.equal((await h.send('circuit', {}, 1_000)).servedBy, 'b', 'a second request is not a second trial');
    assert.equal((await h.settled(trial.outcome)).servedBy, 'a');
    assert.deepEqual(h.states('circuit')[0], 'a up');
  });

  test('a success of a request that began before the circuit opened does not close it: only a trial does', async () => {
    const h = setup();
    h.script('a', { answer: 'slow', after: 1_000 }, ...Array.from({ length: 3 }, () => ({ fail: h.providers.a.httpError(500) })));
    const early = h.start('circuit');
    await h.time.advance(0);
    for (let i = 0; i < 3; i++) await h.send('circuit', {}, 500);
    assert.deepEqual(h.states('circuit')[0], 'a open');
    assert.equal((await h.settled(early.outcome)).servedBy, 'a', 'the early request succeeds');
    assert.deepEqual(h.states('circuit')[0], 'a open', 'and the circuit stays open');
  });

  test('when every deployment is open a request is still tried, on the one that failed least recently', async () => {
    const h = setup();
    h.providers.a.otherwise = { fail: h.providers.a.httpError(500) };
    h.providers.b.otherwise = { fail: h.providers.b.httpError(500) };
    assert.equal((await h.send('both')).error?.kind, 'upstream_error');
    await h.time.advance(1_000);
    assert.equal((await h.send('both')).error?.kind, 'upstream_error');
    assert.deepEqual(h.states('both'), ['a open', 'b open']);
    assert.deepEqual([h.providers.a.calls.length, h.providers.b.calls.length], [1, 1]);
    h.providers.a.otherwise = { answer: 'back' };
    h.providers.b.otherwise = { answer: 'back' };
    assert.equal((await h.send('both')).servedBy, 'a', 'a failed a second before b');
    assert.equal(h.providers.b.calls.length, 1);
  });
});

describe('backoff before a deployment is tried again', () => {
  /** When each attempt was made, in ms from the first. */
  const offsets = (h: RouterHarness) => h.providers.a.calls.map((call) => call.at - h.providers.a.calls[0]!.at);

  test('doubles from `initial` on each repeat, drawn between half and all of it (the lowest draw: half)', async () => {
    const h = setup(() => 0);
    h.providers.a.otherwise = { fail: h.providers.a.httpError(500) };
    const outcome = await h.send('lone');
    assert.equal(outcome.error?.kind, 'upstream_error', 'every attempt failed: the last failure goes back');
    assert.deepEqual(offsets(h), [0, 50, 150, 350, 750], 'waits of 50, 100, 200, 400');
    assert.equal(outcome.sink.header('x-sluice-attempts'), '5');
  });

  test('a draw of one half gives three quarters of each backoff, which stops growing at `max`', async () => {
    const h = setup(() => 0.5);
    h.providers.a.otherwise = { fail: h.providers.a.httpError(500) };
    await h.send('capped');
    // Backoffs 100, 200, 250, 250: waits of 75, 150, 187.5, 187.5.
    assert.deepEqual(offsets(h), [0, 75, 225, 412.5, 600]);
  });

  test('the attempt after the wait is not made a moment early', async () => {
    const h = setup(() => 0);
    h.providers.a.otherwise = { fail: h.providers.a.httpError(503) };
    const { outcome } = h.start('lone');
    await h.time.advance(49);
    assert.equal(h.providers.a.calls.length, 1);
    await h.time.advance(1);
    assert.equal(h.providers.a.calls.length, 2);
    await h.settled(outcome);
  });

  test('no wait before another deployment: only a deployment tried again waits', async () => {
    const h = setup(() => 0);
    h.script('a', { fail: h.providers.a.httpError(500) });
    const outcome = await h.send('circuit');
    assert.equal(outcome.servedBy, 'b');
    assert.equal(h.providers.b.calls[0]!.at, h.providers.a.calls[0]!.at);
  });

  test('retries: 0 makes one attempt', async () => {
    const h = setup();
    h.providers.a.otherwise = { fail: h.providers.a.httpError(500) };
    assert.equal((await h.send('once')).error?.kind, 'upstream_error');
    assert.equal(h.providers.a.calls.length, 1);
  });

  test('the caller leaving during the wait ends it: no further attempt', async () => {
    const h = setup(() => 0);
    h.providers.a.otherwise = { fail: h.providers.a.httpError(500) };
    const { outcome, leave } = h.start('lone');
    await h.time.advance(10);
    assert.equal(h.providers.a.calls.length, 1, 'waiting 50 ms before the second attempt');
    leave();
    await h.time.advance(0);
    const ended = await h.settled(outcome);
    assert.equal(ended.error?.kind, 'upstream_error', "the last upstream failure is the request's");
    assert.equal(h.providers.a.calls.length, 1);
    assert.equal(h.time.now - h.providers.a.calls[0]!.at, 10, 'ended at once, not when the wait was over');
  });
});

describe('Retry-After', () => {
  test('in seconds: the deployment cools that long, shown as cooling, skipped meanwhile, used again after', async () => {
    const h = setup();
    h.script('a', { fail: h.providers.a.httpError(429, '7') });
    assert.equal((await h.send('cools')).servedBy, 'b');
    assert.deepEqual(h.states('cools'), ['a cooling', 'b up']);
    await h.time.advance(6_999);
    assert.equal((await h.send('cools')).servedBy, 'b', 'skipped while cooling');
    await h.time.advance(1);
    assert.deepEqual(h.states('cools')[0], 'a degraded', 'cooled; its failure is still in the window');
    assert.equal((await h.send('cools')).servedBy, 'a');
    assert.equal(h.providers.a.calls.length, 2);
  });

  test('as an HTTP date: cools until that moment', async () => {
    const h = setup();
    h.script('a', { fail: h.providers.a.httpError(503, new Date(h.time.now + 9_000).toUTCString()) });
    assert.equal((await h.send('cools')).servedBy, 'b');
    await h.time.advance(8_999);
    assert.equal((await h.send('cools')).servedBy, 'b');
    await h.time.advance(1);
    assert.equal((await h.send('cools')).servedBy, 'a');
  });

  test('a longer Retry-After is capped at retry_after_max_ms', async () => {
    const h = setup();
    h.script('a', { fail: h.providers.a.httpError(429, '3600') });
    await h.send('cools');
    await h.time.advance(19_999);
    assert.deepEqual(h.states('cools')[0], 'a cooling');
    await h.time.advance(1);
    assert.equal((await h.send('cools')).servedBy, 'a', 'used again after 20 s, not an hour');
  });

  test('a Retry-After that is neither seconds nor a date, or negative, cools nothing', async () => {
    for (const value of ['soon', '-5', '']) {
      const h = setup();
      h.script('a', { fail: h.providers.a.httpError(429, value) });
      assert.equal((await h.send('cools')).servedBy, 'b');
      assert.deepEqual(h.states('cools')[0], 'a degraded', `Retry-After '${value}'`);
      assert.equal((await h.send('cools')).servedBy, 'a', `Retry-After '${value}': asked again at once`);
      h.time.uninstall();
    }
  });

  test('the only deployment: the next attempt waits out its Retry-After rather than the (shorter) backoff', async () => {
    const h = setup(() => 0);
    h.script('a', { fail: h.providers.a.httpError(429, '3') });
    const outcome = await h.send('waits');
    assert.equal(outcome.servedBy, 'a');
    assert.deepEqual(h.providers.a.calls.map((call) => call.at - h.providers.a.calls[0]!.at), [0, 3_000]);
  });

  test('the only deployment, asked to wait longer than the longest backoff: the failure goes back at once, with its Retry-After', async () => {
    const h = setup(() => 0);
    h.script('a', { fail: h.providers.a.httpError(429, '30') });
    const outcome = await h.send('waits');
    assert.equal(outcome.error?.kind, 'upstream_rate_limited');
    assert.equal(outcome.error?.retryAfter, '30', 'the caller is told how long to wait');
    assert.equal(h.providers.a.calls.length, 1);
    assert.equal(h.time.now, h.providers.a.calls[0]!.at, 'no time spent waiting');
  });
});

const T0 = 1_000_000;
const routing = resolveRouting({ circuit: { failures: 2, window_ms: 1_000, cooldown_ms: 500 }, retry_after_max_ms: 3_000 });

describe('one deployment: latency', () => {
  test('unknown until measured; the first sample is the average', () => {
    const health = new DeploymentHealth();
    assert.equal(health.latency(T0), null);
    health.succeeded(T0, 200);
    assert.equal(health.latency(T0), 200);
  });

  test('a burst of samples moves the average by at least 5% each; a sample after a pause by at most half', () => {
    const health = new DeploymentHealth();
    health.succeeded(T0, 200);
    health.succeeded(T0, 400);
    assert.equal(health.latency(T0), 210, 'a sample in the same millisecond weighs the least, 5%');
    health.succeeded(T0 + 30_000, 1_210);
    assert.equal(health.latency(T0 + 30_000), 710, 'after 30 s a sample weighs at most half');
  });

  test('forgotten after a minute without a sample, so that a deployment avoided for being slow is tried again', () => {
    const health = new DeploymentHealth();
    health.succeeded(T0, 5_000);
    assert.equal(health.latency(T0 + 60_000), 5_000);
    assert.equal(health.latency(T0 + 60_001), null);
    health.succeeded(T0 + 60_001, 100);
    assert.equal(health.latency(T0 + 60_001), 100, 'a stale average is replaced, not moved');
  });

  test('a failure weighs as a slow answer: a second at least, or twice the average', () => {
    const fresh = new DeploymentHealth();
    fresh.failed(T0, 10, undefined, routing);
    assert.equal(fresh.latency(T0), 1_000);
    const measured = new DeploymentHealth();
    measured.succeeded(T0, 800);
    measured.failed(T0, 10, undefined, routing);
    assert.equal(measured.latency(T0), 840, '800 moved 5% of the way to 1,600');
  });
});

describe('one deployment: states', () => {
  test('up; degraded while a failure is in the window; up again after it', () => {
    const health = new DeploymentHealth();
    assert.equal(health.state(T0, routing), 'up');
    health.failed(T0, 10, undefined, routing);
    assert.equal(health.state(T0 + 999, routing), 'degraded');
    assert.equal(health.state(T0 + 1_000, routing), 'up');
    assert.ok(health.available(T0 + 1));
  });

  test('Retry-After cools it (capped at retry_after_max_ms): unavailable, then available once it passed', () => {
    const health = new DeploymentHealth();
    health.failed(T0, 10, 60_000, routing);
    assert.equal(health.state(T0, routing), 'cooling');
    assert.equal(health.coolingLeft(T0 + 1_000), 2_000, 'capped at 3 s');
    assert.equal(health.available(T0 + 2_999), false);
    assert.equal(health.available(T0 + 3_000), true);
    assert.equal(health.coolingLeft(T0 + 5_000), 0);
  });

  test('a later, shorter Retry-After does not shorten the cooling', () => {
    const health = new DeploymentHealth();
    health.failed(T0, 10, 2_000, routing);
    health.failed(T0 + 100, 10, 100, routing);
    assert.equal(health.coolingLeft(T0 + 100), 1_900);
  });

  test('the circuit opens at `failures` in the window; after the cooldown one trial is due, and only one', () => {
    const health = new DeploymentHealth();
    health.failed(T0, 10, undefined, routing);
    assert.equal(health.state(T0, routing), 'degraded');
    health.failed(T0 + 10, 10, undefined, routing);
    assert.equal(health.state(T0 + 10, routing), 'open');
    assert.equal(health.available(T0 + 509), false);
    assert.equal(health.trialDue(T0 + 509), false);
    assert.equal(health.trialDue(T0 + 510), true);
    health.begin(T0 + 510);
    assert.equal(health.available(T0 + 510), false, 'the trial is in flight');
    assert.equal(health.trialDue(T0 + 510), false);
    assert.equal(health.state(T0 + 510, routing), 'open', 'open until the trial succeeds');
    health.succeeded(T0 + 600, 90);
    health.end();
    assert.equal(health.state(T0 + 600, routing), 'up', 'closed, its failures forgotten');
    assert.equal(health.latency(T0 + 600), 90, 'and what it measured while failing');
  });

  test('a trial that ends without a verdict (the caller left) leaves the next request to be the trial', () => {
    const health = new DeploymentHealth();
    health.failed(T0, 10, undefined, routing);
    health.failed(T0, 10, undefined, routing);
    health.begin(T0 + 500);
    health.settledWithoutVerdict();
    health.end();
    assert.equal(health.trialDue(T0 + 500), true);
  });

  test('no trial while cooling, even past the cooldown', () => {
    const health = new DeploymentHealth();
    health.failed(T0, 10, undefined, routing);
    health.failed(T0, 10, 2_000, routing);
    assert.equal(health.trialDue(T0 + 600), false);
    assert.equal(health.trialDue(T0 + 2_000), true);
  });

  test('requests in flight are counted', () => {
    const health = new DeploymentHealth();
    health.begin(T0);
    health.begin(T0);
    health.end();
    assert.equal(health.inFlight, 1);
  });
});

test('the board keeps one health per provider and upstream model, shared by every public model that uses it', () => {
  const board = new HealthBoard();
  assert.equal(board.of('a', 'm'), board.of('a', 'm'));
  assert.notEqual(board.of('a', 'm'), board.of('a', 'n'));
  assert.notEqual(board.of('a', 'm'), board.of('b', 'm'));
  // The separator cannot be forged from ids: 'a' + 'bc' is not 'ab' + 'c'.
  assert.notEqual(board.of('a', 'bc'), board.of('ab', 'c'));
});
