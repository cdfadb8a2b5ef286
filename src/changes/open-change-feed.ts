import type { Logger } from 'pino';
import { PollingOnly, type ChangeFeed } from './change-feed.js';

export interface ChangeFeedOptions {
  /** `--redis` / SLUICE_REDIS_URL: when set, notifications go through Redis whatever the store. */
  readonly redisUrl?: string | undefined;
  /** `--redis-prefix` / SLUICE_REDIS_PREFIX: the channel is `<prefix>changes`. */
  readonly redisPrefix: string;
  /** The PostgreSQL store's URL, when the store is PostgreSQL: LISTEN/NOTIFY on it when there is no Redis. */
  readonly postgresUrl?: string | undefined;
  readonly logger: Logger;
}

/**
 * The feed for a deployment: Redis when configured, else PostgreSQL's LISTEN/NOTIFY when the store
 * is PostgreSQL, else none (SQLite: the caches poll the store's counters). It never waits for a
 * connection: an unreachable Redis or database is logged and retried in the background. The
 * client libraries load only when used.
 */
export async function openChangeFeed(options: ChangeFeedOptions): Promise<ChangeFeed> {
  if (options.redisUrl !== undefined && options.redisUrl !== '') {
    const { RedisChangeFeed } = await import('./redis-change-feed.js');
    return new RedisChangeFeed(options.redisUrl, options.redisPrefix, options.logger);
  }
  if (options.postgresUrl !== undefined) {
    const { PostgresChangeFeed } = await import('./postgres-change-feed.js');
    return new PostgresChangeFeed(options.postgresUrl, options.logger);
  }
  return new PollingOnly();
}
