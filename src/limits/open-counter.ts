import cluster from 'node:cluster';
import type { Logger } from 'pino';
import { ClusterCounter } from './cluster-counter.js';
import type { LimitCounter } from './counter.js';
import { FailoverCounter, type Degradation } from './failover-counter.js';
import { LocalCounter } from './local-counter.js';
import { RedisCounter } from './redis-counter.js';
import { maskUrl } from '../core/masked-url.js';

export interface OpenCounter {
  readonly counter: LimitCounter;
  degradation(): Degradation | null;
}

/** How long start-up waits for Redis before serving on local counters (with the alarm raised). */
const CONNECT_WAIT_MS = 2_000;
/** How long a request waits for Redis before it is counted on this machine instead. */
const ANSWER_MS = 1_000;

/**
 * The limit counters for this process: Redis's when configured (this machine's while it is
 * unreachable), else this machine's: the cluster primary's for a worker, this process's own otherwise.
 */
export async function openLimitCounter(options: { redisUrl: string | undefined; redisPrefix: string; logger: Logger }): Promise<OpenCounter> {
  const local = cluster.isWorker ? new ClusterCounter(options.logger) : new LocalCounter();
  if (options.redisUrl === undefined) return { counter: local, degradation: () => null };
  // Loaded only when Redis is configured: the client is a sizeable part of an idle worker's memory.
  const { Redis } = await import('ioredis');
  const redis = new Redis(options.redisUrl, {
    // Fail at once while disconnected, so a request falls back instead of waiting. No command
    // timeout: the failover stops waiting after ANSWER_MS but still hears a stalled Redis's late
    // answers, to give back what a timed-out admission took.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
    lazyConnect: true,
  });
  const failover = new FailoverCounter(new RedisCounter(redis, options.redisPrefix), local, redis, maskUrl(options.redisUrl), options.logger, ANSWER_MS);
  await Promise.race([redis.connect().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CONNECT_WAIT_MS).unref())]);
  return { counter: failover, degradation: () => failover.degradation() };
}

