import type { Logger } from 'pino';
import type { Store, UsageRow } from '../store/store.js';

export interface LedgerOptions {
  readonly flushIntervalMs?: number;
  readonly maxBatch?: number;
  /** Rows kept in memory while the store is failing, beyond which the oldest are dropped (and logged). */
  readonly maxPending?: number;
}

/**
 * One usage row per request, written in batches off the request path. Requests only append to
 * an in-memory buffer; a timer (or a full batch) writes it in one transaction, then the keys'
 * last-used times. `stop()` writes whatever is left, so a graceful stop loses nothing.
 */
export class UsageLedger {
  private buffer: UsageRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly flushIntervalMs: number;
  private readonly maxBatch: number;
  private readonly maxPending: number;

  constructor(
    private readonly store: Store,
    private readonly takeLastUsed: () => ReadonlyMap<string, number>,
    private readonly logger: Logger,
    options: LedgerOptions = {},
  ) {
    this.flushIntervalMs = options.flushIntervalMs ?? 200;
    this.maxBatch = options.maxBatch ?? 1000;
    this.maxPending = options.maxPending ?? 1_000_000;
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.flushIntervalMs);
    this.timer.unref();
  }

  record(row: UsageRow): void {
    this.buffer.push(row);
    if (this.buffer.length >= this.maxBatch) void this.flush();
  }

  /** Writes everything recorded so far; concurrent calls are serialised. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeBatch());
    return this.flushing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async writeBatch(): Promise<void> {
    const rows = this.buffer;
    const lastUsed = this.takeLastUsed();
    if (rows.length === 0 && lastUsed.size === 0) return;
    this.buffer = [];
    try {
      await this.store.usage.append(rows);
    } catch (error) {
      // Keep the rows for the next attempt rather than lose what callers were charged for.
      this.buffer = rows.concat(this.buffer);
      if (this.buffer.length > this.maxPending) {
        const dropped = this.buffer.length - this.maxPending;
        this.buffer.splice(0, dropped);
        this.logger.error({ dropped }, 'usage ledger: store failing, oldest rows dropped');
      }
      this.logger.error({ err: error, pending: this.buffer.length }, 'usage ledger: write failed; will retry');
      return;
    }
    // Apart from the rows, which are written and must not be written again: last-used times are
    // a convenience that the next request of each key refreshes.
    try {
      await this.store.keys.recordUse(lastUsed);
    } catch (error) {
      this.logger.warn({ err: error }, 'usage ledger: last-used times not written');
    }
  }
}
