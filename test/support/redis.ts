import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/** The Redis the tests use (a real server; each test isolates itself under its own key prefix). */
export const REDIS_URL = process.env.SLUICE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A `--redis-prefix` no other test or run shares. */
export function uniqueRedisPrefix(): string {
  return `sluice-test-${process.pid}-${randomBytes(4).toString('hex')}:`;
}

/** A connection for the test itself: to inspect, to kill clients, to clean a prefix up. */
export function redisAdmin(): Redis {
  return new Redis(REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 1 });
}

/** Deletes every key under the prefix (channels hold no keys, but limit counters and the like do). */
export async function cleanRedisPrefix(prefix: string): Promise<void> {
  const redis = redisAdmin();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A TCP port on 127.0.0.1 that nothing listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
