/**
 * One deployment's health, on the clock of the test: the decaying latency average, the failure
 * penalty, the circuit's states, and cooling.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resolveRouting } from '../../../src/config/config-file.js';
import { DeploymentHealth, HealthBoard } from '../../../src/routing/deployment-health.js';

const T0 = 1_000_000;
const routing = resolveRouting({ circuit: { failures: 2, window_ms: 1_000, cooldown_ms: 500 }, retry_after_max_ms: 3_000 });

describe('latency', () => {
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

describe('states', () => {
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
