import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cachedCheck } from '../../../src/http/routes/probes.js';

test('a storm of probes runs one check, and its answer is kept for the ttl', async () => {
  let clock = 0;
  let checks = 0;
  const check = cachedCheck('store', async () => void checks++, { ttlMs: 1000, timeoutMs: 5000, now: () => clock });
  assert.deepEqual(await Promise.all(Array.from({ length: 50 }, () => check())), Array(50).fill(null));
  assert.equal(checks, 1);
  clock = 999;
  assert.equal(await check(), null);
  assert.equal(checks, 1);
  clock = 1000;
  assert.equal(await check(), null);
  assert.equal(checks, 2);
});

test("a failure is named by its code, never its message", async () => {
  const failure = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432 for user sluice'), { code: 'ECONNREFUSED' });
  assert.equal(await cachedCheck('store', async () => Promise.reject(failure), { ttlMs: 1000, timeoutMs: 5000 })(), 'store: the check failed (ECONNREFUSED)');
  assert.equal(await cachedCheck('store', async () => Promise.reject(new Error('password=hunter2')), { ttlMs: 1000, timeoutMs: 5000 })(), 'store: the check failed');
  assert.equal(await cachedCheck('store', async () => Promise.reject(Object.assign(new Error('x'), { code: 'a code with spaces' })), { ttlMs: 1000, timeoutMs: 5000 })(), 'store: the check failed');
});

test('a check with no answer is "no answer" after the timeout, and is not started again while it runs', async () => {
  let clock = 0;
  let checks = 0;
  let finish: () => void = () => undefined;
  const check = cachedCheck('store', () => {
    checks++;
    return new Promise<void>((resolve) => (finish = resolve));
  }, { ttlMs: 1000, timeoutMs: 10, now: () => clock });
  assert.equal(await check(), 'store: no answer within 10 ms');
  clock = 5000;
  assert.equal(await check(), 'store: no answer within 10 ms');
  assert.equal(checks, 1, 'the hung check is waited for, not doubled');
  finish();
  assert.equal(await check(), null);
  assert.equal(checks, 1);
});
