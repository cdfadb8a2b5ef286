import type { Logger } from 'pino';
import { randomBase62 } from '../core/ids.js';
import type { KeysRepository, UsageRepository, UsageRow } from '../store/store.js';
import type { LedgerJournal } from './ledger-journal.js';

export interface LedgerOptions {
  readonly flushIntervalMs?: number;
  readonly maxBatch?: number;
  /** Rows kept in memory while the store is failing; beyond it the oldest stay only in the journal until the next start. */
  readonly maxPending?: number;
}

/** What is known of a request once it is admitted, before it has an outcome. */
export type LedgerStart = Pick<UsageRow, 'at' | 'requestId' | 'accountId' | 'keyId' | 'operation' | 'model' | 'providerId' | 'stream'>;

/** The token columns of a row that consumed no tokens (a request that never reached a model, an MCP call). */
export const NO_TOKENS = {
  promptTokens: 0,
  completionTokens: 0,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  tokensCounted: false,
} as const satisfies Partial<UsageRow>;

/** The row a request leaves when its process dies before it ends: Sluice's fault, never the provider's. */
export function interruptedRow(entryId: string, start: LedgerStart): UsageRow {
  return {
    ...start,
    ...NO_TOKENS,
    entryId,
    status: 500,
    errorKind: 'interrupted',
    latencyMs: 0,
    ttfbMs: null,
    costUsd: 0,
    unpriced: false,
    attempts: 0,
    deployment: null,
    attemptLog: null,
  };
}

/** How often a graceful stop tries the store again while it is unavailable. */
const STOP_RETRY_MS = 100;

/**
 * One usage row per request, written in batches off the request path. Every row goes to the
 * journal first (a local file, see LedgerJournal) and to an in-memory buffer; a timer (or a full
 * batch) writes the buffer to the store in one transaction, then the keys' last-used times. A row
 * the store could not take stays in the buffer and the journal; a stop that cannot reach the store
 * leaves the journal for the next start to import.
 */
export class UsageLedger {
  private buffer: UsageRow[] = [];
  /** Rows of the batch the store is being asked to take (out of the buffer until it answers). */
  private writing = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<boolean> = Promise.resolve(true);
  /** Entry ids: unique across processes by a random prefix, cheap within one by a counter. */
  private readonly entryPrefix = `${randomBase62(10)}.`;
  private entries = 0;
  /** Set once rows were let go of in memory: the journal then holds them until the next start imports it. */
  private journalOnly = false;
  /** Past the stop's deadline: writes still queued leave their rows to the journal rather than wait on the store again. */
  private stopped = false;
  private readonly flushIntervalMs: number;
  private readonly maxBatch: number;
  private readonly maxPending: number;
  /** Rows the store took, and batches it refused (their rows stay buffered and journaled). */
  readonly written = { rows: 0, failures: 0 };

  constructor(
    private readonly usage: Pick<UsageRepository, 'append'>,
    /** Where the keys' last-used times go, written with each batch. */
    private readonly keys: Pick<KeysRepository, 'recordUse'>,
    private readonly journal: LedgerJournal,
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

  /** Rows recorded and not yet written to the store: those waiting, and the batch being written. */
  get buffered(): number {
    return this.buffer.length + this.writing;
  }

  /** A request is under way; returns its entry id. Until `record`, it stands in the journal as a provisional row. */
  begin(start: LedgerStart): string {
    const entryId = this.nextEntryId();
    this.journal.begin(entryId, start);
    return entryId;
  }

  /** An entry id for a row that had no `begin` (a request refused before it was admitted). */
  nextEntryId(): string {
    return this.entryPrefix + (this.entries++).toString(36);
  }

  /** The request's final row, under the entry id `begin` gave, or a fresh one. */
  record(row: UsageRow): void {
    this.journal.append(row);
    this.buffer.push(row);
    if (this.buffer.length >= this.maxBatch) void this.flush();
  }

  /** Writes everything recorded so far; concurrent calls are serialised. Resolves false when the store failed. */
  flush(): Promise<boolean> {
    this.flushing = this.flushing.then(() => this.writeBatch());
    return this.flushing;
  }

  /**
   * Tries the store until `deadline` (Unix ms). What it could not write stays in the journal, which
   * the next start imports; fails only when rows could be kept neither in the store nor on disk.
   */
  async stop(deadline: number): Promise<void> {
    clearInterval(this.timer);
    for (;;) {
      const written = await beforeDeadline(this.flush(), deadline);
      if (written === true && this.buffer.length === 0 && !this.journalOnly) {
        await this.journal.close(true);
        return;
      }
      if (Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, STOP_RETRY_MS));
    }
    this.stopped = true;
    await this.journal.close(false);
    if (!this.journal.healthy) throw new Error(`usage ledger: ${this.buffer.length} rows could be written neither to the store nor to the journal`);
    this.logger.warn(
      { pending: this.buffer.length, file: this.journal.file },
      'usage ledger: the store did not take the last rows before the deadline; they are kept in the journal and imported at the next start',
    );
  }

  private async writeBatch(): Promise<boolean> {
    if (this.stopped) return false;
    const rows = this.buffer;
    const lastUsed = this.takeLastUsed();
    if (rows.length === 0 && lastUsed.size === 0) return true;
    this.buffer = [];
    this.writing = rows.length;
    try {
      await this.usage.append(rows);
      this.written.rows += rows.length;
    } catch (error) {
      this.written.failures++;
      // Keep the rows for the next attempt rather than lose what callers were charged for.
      this.buffer = rows.concat(this.buffer);
      if (this.buffer.length > this.maxPending) {
        const dropped = this.buffer.length - this.maxPending;
        this.buffer.splice(0, dropped);
        this.journalOnly = true;
        this.logger.error({ dropped, file: this.journal.file }, 'usage ledger: store failing; the oldest rows are kept only in the journal until the next start');
      }
      this.logger.error({ err: error, pending: this.buffer.length }, 'usage ledger: write failed; will retry');
      return false;
    } finally {
      this.writing = 0;
    }
    if (this.journal.needsRotation && !this.journalOnly) {
      await this.journal.rotate(() => this.buffer).catch((error: unknown) => {
        this.logger.warn({ err: error }, 'usage ledger: journal not rotated; it keeps growing until the next start');
      });
    }
    // Apart from the rows, which are written and must not be written again: last-used times are
    // a convenience that the next request of each key refreshes.
    try {
      await this.keys.recordUse(lastUsed);
    } catch (error) {
      this.logger.warn({ err: error }, 'usage ledger: last-used times not written');
    }
    return true;
  }
}

/** The promise's value, or undefined once the deadline passes first. */
async function beforeDeadline<T>(promise: Promise<T>, deadline: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()))))]);
  } finally {
    clearTimeout(timer);
  }
}
