import pg from 'pg';
import type { Logger } from 'pino';
import { ChangeListeners, isChangeTopic, POSTGRES_CHANGE_CHANNEL, type ChangeFeed, type ChangeListener, type ChangeTopic } from './change-feed.js';
import { maskUrl } from '../core/masked-url.js';

/** Reconnection backoff: 100 ms, doubling, at most 5 s between attempts. */
const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/**
 * Change notifications over PostgreSQL's LISTEN/NOTIFY, for a PostgreSQL store without Redis. One
 * dedicated connection (not the store's pool, whose connections come and go) listens on the
 * channel; when the server drops it (a restart, a failover, `pg_terminate_backend`) it is made
 * again with backoff, for as long as the feed is open. The store NOTIFYs inside the transaction
 * that bumps a change counter, so every writer (another gateway, a CLI command) reaches listeners
 * at commit without any configuration of its own; `publish` is for anything else.
 */
export class PostgresChangeFeed implements ChangeFeed {
  readonly name = 'postgres';
  private readonly listeners = new ChangeListeners();
  private client: pg.Client | undefined;
  private attempt = 0;
  private outage = false;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private readonly where: string;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly channel: string = POSTGRES_CHANGE_CHANNEL,
  ) {
    this.where = maskUrl(url);
    void this.connect();
  }

  get healthy(): boolean {
    return !this.closed && this.client !== undefined;
  }

  async publish(topic: ChangeTopic): Promise<void> {
    const client = this.client;
    if (client === undefined) return; // down: the caches poll
    try {
      await client.query('SELECT pg_notify($1, $2)', [this.channel, topic]);
    } catch (error) {
      if (!this.outage && !this.closed) {
        this.logger.warn({ database: this.where, topic, err: messageOf(error) }, 'change notification not sent through PostgreSQL; other processes will see the change by polling');
      }
    }
  }

  subscribe(listener: ChangeListener): () => void {
    return this.listeners.add(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, keepAlive: true, connectionTimeoutMillis: 5_000, application_name: 'sluice-changes' });
    let gone = false;
    const lost = (error: unknown) => {
      if (gone) return;
      gone = true;
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      this.reconnectLater(error);
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('connection ended')));
    client.on('notification', (message) => {
      if (message.channel === this.channel && isChangeTopic(message.payload)) this.listeners.emit(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
    } catch (error) {
      lost(error);
      return;
    }
    if (this.closed || gone) {
      gone = true;
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.attempt = 0;
    if (this.outage) {
      this.outage = false;
      this.logger.info({ database: this.where }, 'PostgreSQL change notifications resumed');
    }
    // Whatever was notified while nobody listened is lost: every cache looks again.
    this.listeners.emitAll();
  }

  private reconnectLater(error: unknown): void {
    if (this.closed) return;
    if (!this.outage) {
      this.outage = true;
      this.logger.warn(
        { database: this.where, err: messageOf(error) },
        'PostgreSQL change notifications paused (the listening connection failed): changes are seen by polling the store until it is back; reconnecting',
      );
    }
    const delay = Math.min(RECONNECT_FIRST_MS * 2 ** this.attempt, RECONNECT_MAX_MS);
    this.attempt++;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.connect(), delay);
    this.retry.unref();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
