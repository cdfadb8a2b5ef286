// postgres-pass: skip (in process: limit counters on Redis, no store)
/**
 * How the Redis counter sends settles (src/limits/redis-counter.ts): queued and sent together, a
 * slot freed for other replicas by the end of the turn, and a burst of any size sent whole.
 */
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisCounter } from '../src/limits/redis-counter.js';
import { LEASE_MS, reservation, scope } from './support/limit-counter-conformance.js';
import { cleanRedisPrefix, REDIS_URL, uniqueRedisPrefix } from './support/redis.js';

const prefix = uniqueRedisPrefix();
const clients: Redis[] = [];

async function replica(): Promise<{ redis: Redis; counter: RedisCounter }> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  await redis.connect();
  clients.push(redis);
  return { redis, counter: new RedisCounter(redis, prefix) };
}

after(async () => {
  for (const redis of clients) redis.disconnect();
  await cleanRedisPrefix(prefix);
});

test('a settle that frees a concurrency slot reaches Redis within its turn: the next request on another replica is admitted', async () => {
  const a = await replica();
  const b = await replica();
  const limits = [scope('key:one-at-a-time', { concurrency: 1 })];
  const first = reservation();
  assert.equal((await a.counter.admit(limits, first, LEASE_MS)).admitted, true);
  assert.equal((await b.counter.admit(limits, reservation(), LEASE_MS)).admitted, false, 'the slot is held');
  const settled = a.counter.settle(limits, first, { tokens: 10, costUsd: 0 });
  await nextTurn();
  // Answered after whatever replica A sent before it on the same connection.
  await a.redis.ping();
  assert.equal((await b.counter.admit(limits, reservation(), LEASE_MS)).admitted, true, 'the slot is free for another replica');
  await settled;
});

test('thousands of settles queued at once are all sent, none lost, and the counters end where they should', async () => {
  const { counter } = await replica();
  const limits = [scope('key:burst', { concurrency: 100_000, tpm: 100_000_000 }), scope('account:burst', { concurrency: 100_000, tpm: 100_000_000 })];
  const held = [];
  for (let i = 0; i < 12_000; i += 1_000) {
    const batch = Array.from({ length: 1_000 }, () => reservation(10));
    const admitted = await Promise.all(batch.map((r) => counter.admit(limits, r, LEASE_MS)));
    assert.ok(admitted.every((result) => result.admitted));
    held.push(...batch);
  }
  assert.deepEqual((await counter.usage(limits)).map((usage) => usage.inFlight), [12_000, 12_000]);
  // Every settle in one turn, as when Redis comes back after an outage and the kept ones are sent.
  await Promise.all(held.map((r) => counter.settle(limits, r, { tokens: 3, costUsd: 0 })));
  const usage = await counter.usage(limits);
  assert.deepEqual(usage.map((scopeUsage) => scopeUsage.inFlight), [0, 0]);
  assert.deepEqual(usage.map((scopeUsage) => scopeUsage.tokens), [36_000, 36_000]);
});
