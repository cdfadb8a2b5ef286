// postgres-pass: skip (in process: limit counters in memory and on Redis, no store)
/**
 * The limit-counter conformance suite (test/support/limit-counter-conformance.ts) on the real Redis
 * of this machine, under a key prefix of its own. The counter in memory runs the same suite in the
 * unit layer (test/unit/core/limits.test.ts).
 */
import { Redis } from 'ioredis';
import { RedisCounter } from '../src/limits/redis-counter.js';
import { limitCounterConformance } from './support/limit-counter-conformance.js';
import { cleanRedisPrefix, REDIS_URL, uniqueRedisPrefix } from './support/redis.js';

limitCounterConformance('Redis', async () => {
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  await redis.connect();
  const prefix = uniqueRedisPrefix();
  return {
    counter: new RedisCounter(redis, prefix),
    done: async () => {
      redis.disconnect();
      await cleanRedisPrefix(prefix);
    },
    // Redis keeps its own time: only a real wait lets it pass.
    elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
});
