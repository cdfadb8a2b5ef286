import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { ChangeListeners, isChangeTopic, type ChangeFeed, type ChangeListener, type ChangeTopic } from './change-feed.js';
import { maskUrl } from '../core/masked-url.js';

/** How long a publish waits for a connection still being made (a CLI command's first), when no outage is known. */
const CONNECT_WAIT_MS = 1_000;
/** How long a publish waits for Redis to answer; past it, the change is left to polling. */
const PUBLISH_TIMEOUT_MS = 1_000;

/** The channel of change notifications under a prefix. */
export function changeChannel(prefix: string): string {
  return `${prefix}changes`;
}

/**
 * Change notifications over Redis pub/sub: one connection publishes, a second one (made on the
 * first `subscribe`, since a subscribed connection can do nothing else) listens on
 * `<prefix>changes`. Both connect in the background and reconnect on their own, with backoff, for
 * as long as the feed is open: Redis down at start or later stops nothing, the caches poll
 * meanwhile. An outage is logged once when it begins and once when it ends.
 */
export class RedisChangeFeed implements ChangeFeed {
  readonly name = 'redis';
  readonly channel: string;
  private readonly listeners = new ChangeListeners();
  private readonly publisher: Redis;
  private subscriber: Redis | undefined;
  private subscribed = false;
  private outage = false;
  private closed = false;
  private readonly where: string;

  constructor(
    private readonly url: string,
    prefix: string,
    private readonly logger: Logger,
  ) {
    this.channel = changeChannel(prefix);
    this.where = maskUrl(url);
    this.publisher = this.connect('sluice-publish');
    this.publisher.on('ready', () => this.checkBack());
  }

  get healthy(): boolean {
    return !this.closed && this.publisher.status === 'ready' && (this.subscriber === undefined || this.subscribed);
  }

  async publish(topic: ChangeTopic): Promise<void> {
    if (this.closed) return;
    try {
      if (this.publisher.status !== 'ready') {
        if (this.outage) return; // already logged; the caches poll
        await this.untilReady(CONNECT_WAIT_MS);
      }
      await withTimeout(this.publisher.publish(this.channel, topic), PUBLISH_TIMEOUT_MS, 'Redis did not answer the publish');
    } catch (error) {
      if (!this.outage && !this.closed) {
        this.logger.warn({ redis: this.where, topic, err: messageOf(error) }, 'change notification not sent through Redis; other processes will see the change by polling');
      }
    }
  }

  subscribe(listener: ChangeListener): () => void {
    if (this.subscriber === undefined && !this.closed) {
      const subscriber = this.connect('sluice-subscribe');
      this.subscriber = subscriber;
      subscriber.on('ready', () => {
        subscriber.subscribe(this.channel).then(
          () => {
            this.subscribed = true;
            this.checkBack();
            this.listeners.emitAll();
          },
          (error: unknown) => this.lost(error),
        );
      });
      subscriber.on('close', () => (this.subscribed = false));
      subscriber.on('message', (channel: string, message: string) => {
        if (channel === this.channel && isChangeTopic(message)) this.listeners.emit(message);
      });
    }
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscriber?.disconnect();
    this.publisher.disconnect();
  }

  private connect(connectionName: string): Redis {
    const options: RedisOptions = {
      connectionName,
      connectTimeout: 2_000,
      // 100 ms, 200 ms, 400 ms … then every 2 s, for as long as the feed is open.
      retryStrategy: (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 6), 2_000),
      // Nothing waits in a queue for a connection that is down: a late notification is worth nothing.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      autoResubscribe: false,
    };
    const redis = new Redis(this.url, options);
    redis.on('error', (error: unknown) => this.lost(error));
    let wasReady = false;
    redis.on('ready', () => (wasReady = true));
    redis.on('close', () => {
      if (wasReady) this.lost(new Error('connection closed'));
      wasReady = false;
    });
    return redis;
  }

  /** A connection failed or dropped: the first such event of an outage is logged. */
  private lost(error: unknown): void {
    if (this.closed || this.outage) return;
    this.outage = true;
    this.logger.warn(
      { redis: this.where, err: messageOf(error) },
      'Redis unreachable: change notifications paused, changes are seen by polling the store until it is back; reconnecting',
    );
  }

  private checkBack(): void {
    if (this.outage && this.healthy) {
      this.outage = false;
      this.logger.info({ redis: this.where }, 'Redis reachable again: change notifications resumed');
    }
  }

  private untilReady(ms: number): Promise<void> {
    const publisher = this.publisher;
    return new Promise((resolve, reject) => {
      const done = (error?: unknown) => {
        clearTimeout(timer);
        publisher.off('ready', onReady);
        publisher.off('error', done);
        publisher.off('end', onEnd);
        if (error === undefined) resolve();
        else reject(error instanceof Error ? error : new Error(String(error)));
      };
      const onReady = () => done();
      const onEnd = () => done(new Error('connection ended'));
      const timer = setTimeout(() => done(new Error(`not connected after ${ms} ms`)), ms);
      publisher.once('ready', onReady);
      publisher.once('error', done);
      publisher.once('end', onEnd);
    });
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
