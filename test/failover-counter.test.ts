// postgres-pass: skip (in process: limit counters over Redis, no store)
/**
 * The failover counter's bookkeeping across a Redis outage, in process: what a timed-out admission
 * took is given back when a stalled Redis runs it late, a settle Redis could not take is sent again,
 * and spend counted on this machine meanwhile is added to Redis's counter once. A stall is a
 * `CLIENT PAUSE` on a private redis-server (pausing the machine's would stall every other test); a
 * lost connection is a TCP relay cut in front of the machine's Redis.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { ScopeLimits } from '../src/limits/counter.js';
import { FailoverCounter } from '../src/limits/failover-counter.js';
import { LocalCounter } from '../src/limits/local-counter.js';
import { RedisCounter } from '../src/limits/redis-counter.js';
import { cleanRedisPrefix, closedPort, REDIS_URL, redisAdmin, uniqueRedisPrefix } from './support/redis.js';
import { eventually, tempDir } from './support/sluice.js';
import { startTcpProxy } from './support/tcp-proxy.js';

const LEASE_MS = 30_000;
const ANSWER_MS = 200;
const PERIOD_START = Date.UTC(2026, 0, 1);
const servers: ChildProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  for (const server of servers) server.kill('SIGKILL');
});

const scope = (id: string, limits: Partial<Omit<ScopeLimits, 'scope'>>): ScopeLimits => ({ scope: id, rpm: 0, tpm: 0, concurrency: 0, budget: null, ...limits });
const budget = (usd: number) => ({ usd, periodStart: PERIOD_START, periodEnd: Date.now() + 3_600_000 });
let leases = 0;
const reservation = (costUsd: number) => ({ lease: `lease-${++leases}`, tokens: 10, costUsd });

async function privateRedis(): Promise<number> {
  const port = await closedPort();
  servers.push(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tempDir()], { stdio: 'ignore' }));
  const client = new Redis({ port, lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
  client.on('error', () => undefined);
  try {
    await eventually(() => client.ping().then(() => true, () => undefined), 5000, 'redis-server to answer');
  } finally {
    client.disconnect();
  }
  return port;
}

/** A failover counter over Redis as the gateway opens it (open-counter.ts), with a short answer timeout. */
async function failover(port: number, prefix: string) {
  const redis = new Redis({ port, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: (attempt) => Math.min(attempt * 50, 200), lazyConnect: true });
  await redis.connect();
  const counter = new FailoverCounter(new RedisCounter(redis, prefix), new LocalCounter(), redis, 'test', pino({ level: 'silent' }), ANSWER_MS);
  cleanups.push(() => counter.close());
  return counter;
}

const shared = (counter: FailoverCounter) => eventually(() => (counter.degradation() === null ? true : undefined), 10_000, 'the counter to use Redis again');

test('an admission that timed out and that a paused Redis ran later leaves neither its slot nor its reservation there; the spend counted here is added once', async () => {
  const port = await privateRedis();
  const prefix = uniqueRedisPrefix();
  const admin = new Redis({ port });
  const waiter = new Redis({ port });
  cleanups.push(() => (admin.disconnect(), waiter.disconnect()));
  const counter = await failover(port, prefix);
  const limits = [scope('key:paused', { concurrency: 1, budget: budget(10) })];
  await counter.seedSpend(limits[0]!, 1);
  const spend = `${prefix}limit:key:paused:spend:${PERIOD_START}`;

  await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
  const held = reservation(0.5);
  let during = await counter.admit(limits, held, LEASE_MS);
  if ('unseeded' in during) {
    // The local counters start the period from the ledger, as the admit stage does (limit-admission.ts).
    await counter.seedSpend(limits[0]!, 1);
    during = await counter.admit(limits, held, LEASE_MS);
  }
  assert.ok(during.admitted, 'admitted on the local counters when Redis does not answer in time');
  assert.notEqual(counter.degradation(), null, 'degraded meanwhile');
  await waiter.eval('return 1', 0);
  await shared(counter);

  // Redis ran the held admission when the pause ended; the request is counted here, so Redis gave it
  // back (before this next admission, which goes after it on the same connection).
  const next = reservation(0.5);
  assert.ok((await counter.admit(limits, next, LEASE_MS)).admitted, "the key's one slot is free in Redis");
  assert.deepEqual(await admin.zrange(`${prefix}limit:key:paused:fly`, '0', '-1'), [next.lease], 'Redis holds the next request\'s slot alone');
  assert.equal(Number(await admin.get(spend)), 1.5, "Redis's spend: $1 and the next request's reservation; the held one's was given back");

  // The request admitted here ends: its real cost reaches Redis's counter, beside the next one's reservation.
  await counter.settle(limits, held, { tokens: 7, costUsd: 0.25 });
  await eventually(async () => (Math.abs(Number(await admin.get(spend)) - 1.75) < 1e-9 ? true : undefined), 5000, "Redis's spend to reach $1.75");
  await counter.settle(limits, next, { tokens: 7, costUsd: 0.5 });
  assert.equal(Number(await admin.get(spend)), 1.75, 'each request counted once: $1 + $0.25 + $0.50');
  assert.equal(await admin.zcard(`${prefix}limit:key:paused:fly`), 0, 'the slot is released');
});

test("a settle Redis could not take (the connection was lost) is sent again when it is back, releasing the request's slot", async () => {
  const proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
  const prefix = uniqueRedisPrefix();
  const admin = redisAdmin();
  cleanups.push(() => (admin.disconnect(), cleanRedisPrefix(prefix)), () => proxy.close());
  const counter = await failover(proxy.port, prefix);
  const limits = [scope('key:cut', { concurrency: 1, budget: budget(10) })];
  await counter.seedSpend(limits[0]!, 0);
  const held = reservation(0.5);
  assert.ok((await counter.admit(limits, held, LEASE_MS)).admitted, 'admitted in Redis');
  assert.equal(await admin.zcard(`${prefix}limit:key:cut:fly`), 1, 'its slot is in Redis');

  proxy.cut();
  await eventually(() => (counter.degradation() !== null ? true : undefined), 5000, 'the counter to notice');
  await counter.settle(limits, held, { tokens: 7, costUsd: 0.25 });
  assert.equal(await admin.zcard(`${prefix}limit:key:cut:fly`), 1, 'Redis has not heard of it while cut off');
  proxy.restore();
  await shared(counter);
  await eventually(async () => ((await admin.zcard(`${prefix}limit:key:cut:fly`)) === 0 ? true : undefined), 5000, 'the slot to be released');
  assert.equal(Number(await admin.get(`${prefix}limit:key:cut:spend:${PERIOD_START}`)), 0.25, 'the reservation settled to the real cost');
});

test('added spend counts once per batch, however often it is sent, and never creates a counter the ledger should seed', async () => {
  const prefix = uniqueRedisPrefix();
  const redis = redisAdmin();
  cleanups.push(() => (redis.disconnect(), cleanRedisPrefix(prefix)));
  const counter = new RedisCounter(redis, prefix);
  const seeded = scope('key:seeded', { budget: budget(10) });
  const unseeded = scope('key:unseeded', { budget: budget(10) });
  await counter.seedSpend(seeded, 2);
  await counter.addSpend('replica-a.0', [{ scope: seeded, usd: 0.5 }, { scope: unseeded, usd: 0.5 }]);
  await counter.addSpend('replica-a.0', [{ scope: seeded, usd: 0.5 }, { scope: unseeded, usd: 0.5 }]);
  assert.equal((await counter.usage([seeded]))[0]!.spentUsd, 2.5, 'a batch sent twice is added once');
  await counter.addSpend('replica-b.0', [{ scope: seeded, usd: 0.25 }]);
  assert.equal((await counter.usage([seeded]))[0]!.spentUsd, 2.75, "another replica's batch is added too");
  assert.equal((await counter.usage([unseeded]))[0]!.spentUsd, null, 'a counter not seeded stays unseeded, for the ledger to seed');
});
