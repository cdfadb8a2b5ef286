import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { AttemptLogEntry } from '../core/attempts.js';
import type { UsageRepository, UsageRow } from '../store/store.js';
import { interruptedRow, type LedgerStart } from './ledger.js';

/** The folder of the data directory that holds the journals. */
export const JOURNAL_DIR = 'ledger';
/** Past this size, the next successful ledger write starts a new journal holding only what is unwritten. */
const ROTATE_BYTES = 4 * 1024 * 1024;
const IMPORT_BATCH = 1000;
/**
 * Lines wait this long to be written together: a quiet gateway then makes one write for many
 * requests rather than two for each, and a kill can lose at most this much (plus a write in flight).
 */
export const JOURNAL_FLUSH_MS = 5;
const FILE_PATTERN = /^(?:journal|recovering)-(\d+)-[A-Za-z0-9]+\.jsonl$/;

/**
 * The ledger's write-ahead file: every row (and, while a request runs, its provisional row) is
 * appended here before it is batched into the store. A process killed before its batch was written,
 * or stopped while the store was unavailable, leaves its journal behind; the next start of any
 * process on the data directory imports it. The store deduplicates by entry id, so a row that did
 * reach the store before the stop is not written twice.
 *
 * One journal per process (`journal-PID-RANDOM.jsonl`): appends are queued and written together
 * every JOURNAL_FLUSH_MS, not one write per row.
 */
export class LedgerJournal {
  private queue: string[] = [];
  /** The requests under way, by entry id; a rotated journal starts with them. */
  private readonly inFlight = new Map<string, LedgerStart>();
  /**
   * Requests begun since the last write. Their start lines are written only if they are still
   * under way then: most requests end sooner, and need only their finished row.
   */
  private begun: string[] = [];
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private size = 0;
  private writeFailed = false;

  private constructor(
    private readonly dir: string,
    private handle: FileHandle,
    private path: string,
    private readonly logger: Logger,
  ) {}

  /** Creates this process's journal; throws when the data directory cannot hold one. */
  static async open(dataDir: string, logger: Logger): Promise<LedgerJournal> {
    const dir = join(dataDir, JOURNAL_DIR);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = newJournalPath(dir);
    return new LedgerJournal(dir, await open(path, 'wx', 0o600), path, logger);
  }

  get file(): string {
    return this.path;
  }

  /** False once a write failed: rows since then exist only in memory until the store has them. */
  get healthy(): boolean {
    return !this.writeFailed;
  }

  get needsRotation(): boolean {
    return this.size > ROTATE_BYTES;
  }

  /** A request under way, journalled as `B`, its entry id and what is known of it, if it is still under way at the next write. */
  begin(entryId: string, start: LedgerStart): void {
    this.inFlight.set(entryId, start);
    this.begun.push(entryId);
    this.schedule();
  }

  /** A finished request's row, journalled as `R` and the row's values. */
  append(row: UsageRow): void {
    this.inFlight.delete(row.entryId);
    this.queue.push(rowLine(row));
    this.schedule();
  }

  /** Start lines for the requests begun since the last write that have not ended yet. */
  private takeBegun(): void {
    for (const entryId of this.begun) {
      const start = this.inFlight.get(entryId);
      if (start !== undefined) this.queue.push(startLine(entryId, start));
    }
    this.begun = [];
  }

  private schedule(): void {
    if (this.writing !== undefined || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, JOURNAL_FLUSH_MS);
    this.timer.unref();
  }

  /** Starts writing what is queued, unless a write is under way (which takes it when it is done). */
  private kick(): void {
    if (this.writing !== undefined) return;
    this.takeBegun();
    if (this.queue.length === 0) return;
    const writing: Promise<void> = this.drain(this.handle).then(() => {
      if (this.writing === writing) this.writing = undefined;
      // What arrived during the last write waits for the next tick of the timer.
      if (this.queue.length > 0 || this.begun.length > 0) this.schedule();
    });
    this.writing = writing;
  }

  /** Writes the queue to `handle` until it is empty, or until a rotation moves the journal on. */
  private async drain(handle: FileHandle): Promise<void> {
    while (this.queue.length > 0 && handle === this.handle) {
      const text = this.queue.join('');
      this.queue = [];
      try {
        await handle.write(text);
        this.size += Buffer.byteLength(text);
      } catch (error) {
        if (!this.writeFailed) this.logger.error({ err: error, file: this.path }, 'usage ledger: journal write failed; rows are kept in memory only');
        this.writeFailed = true;
      }
    }
  }

  /**
   * Starts a new journal holding only the requests under way and `unwritten()` (both read at the
   * moment of the switch, so nothing appended meanwhile is missed), then removes the old one,
   * whose rows the store now has.
   */
  async rotate(unwritten: () => readonly UsageRow[]): Promise<void> {
    const path = newJournalPath(this.dir);
    const next = await open(path, 'wx', 0o600);
    const previous = { handle: this.handle, path: this.path, writing: this.writing };
    this.handle = next;
    this.path = path;
    this.size = 0;
    // Lines still queued for the old file are among the unwritten rows.
    this.queue = [];
    this.begun = [];
    for (const [entryId, start] of this.inFlight) this.queue.push(startLine(entryId, start));
    for (const row of unwritten()) this.queue.push(rowLine(row));
    this.writing = undefined;
    this.kick();
    await previous.writing;
    await previous.handle.close();
    await unlink(previous.path);
  }

  /** Writes what is queued; then removes the journal (everything is in the store) or keeps it for the next start. */
  async close(remove: boolean): Promise<void> {
    for (;;) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.kick();
      if (this.writing === undefined) break;
      await this.writing;
    }
    await this.handle.close();
    if (remove) await unlink(this.path);
  }
}

/**
 * Imports the journals that no running process owns: those of processes that are gone, and any
 * bearing this process's own id (a predecessor's, as in a container where the id repeats). Each is
 * claimed by renaming it, so two processes starting together never import one twice.
 */
export async function importOrphanedJournals(dataDir: string, usage: Pick<UsageRepository, 'appendOnce'>, logger: Logger): Promise<number> {
  const dir = join(dataDir, JOURNAL_DIR);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let imported = 0;
  for (const name of names) {
    const match = FILE_PATTERN.exec(name);
    if (match === null || isRunning(Number(match[1]))) continue;
    const claimed = join(dir, `recovering-${process.pid}-${randomBytes(6).toString('hex')}.jsonl`);
    try {
      await rename(join(dir, name), claimed);
    } catch {
      continue; // Another process claimed it first.
    }
    const rows = readJournal(await readFile(claimed, 'utf8'));
    for (let start = 0; start < rows.length; start += IMPORT_BATCH) await usage.appendOnce(rows.slice(start, start + IMPORT_BATCH));
    await unlink(claimed);
    imported += rows.length;
    logger.warn({ file: name, rows: rows.length }, 'usage ledger: imported the rows a previous process left in its journal');
  }
  return imported;
}

/** The ids of running processes that own a journal in the data directory: gateways still writing to it. */
export function runningJournalOwners(dataDir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(join(dataDir, JOURNAL_DIR));
  } catch {
    return [];
  }
  const owners = names.map((name) => FILE_PATTERN.exec(name)).filter((match) => match !== null).map((match) => Number(match[1]));
  return [...new Set(owners)].filter(isRunning);
}

/**
 * Each entry's row: its finished row, or a provisional `interrupted` one for a request that never
 * ended. A torn last line (a kill mid-write) is skipped.
 */
function readJournal(text: string): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  for (const line of text.split('\n')) {
    try {
      if (line.startsWith('R\t')) {
        const row = rowOf(JSON.parse(line.slice(2)) as RowValues);
        rows.set(row.entryId, row);
      } else if (line.startsWith('B\t')) {
        const tab = line.indexOf('\t', 2);
        const entryId = line.slice(2, tab);
        if (!rows.has(entryId)) rows.set(entryId, interruptedRow(entryId, JSON.parse(line.slice(tab + 1)) as LedgerStart));
      }
    } catch {
      // Only a line cut short by a kill can be unreadable.
    }
  }
  return [...rows.values()];
}

function startLine(entryId: string, start: LedgerStart): string {
  return `B\t${entryId}\t${JSON.stringify(start)}\n`;
}

/** A row's values in a fixed order: shorter to write than the row's object, and cheaper to make. */
type RowValues = [
  entryId: string, at: number, requestId: string, accountId: string, keyId: string, operation: string, model: string,
  providerId: string | null, status: number, errorKind: string | null, stream: boolean, promptTokens: number,
  completionTokens: number, cachedInputTokens: number, cacheWriteTokens: number, reasoningTokens: number,
  tokensCounted: boolean, latencyMs: number, ttfbMs: number | null, costUsd: number, attempts?: number, deployment?: string | null,
  attemptLog?: readonly AttemptLogEntry[] | null, unpriced?: boolean, bytesIn?: number | null, bytesOut?: number | null,
];

function rowLine(r: UsageRow): string {
  const values: RowValues = [
    r.entryId, r.at, r.requestId, r.accountId, r.keyId, r.operation, r.model, r.providerId, r.status, r.errorKind, r.stream, r.promptTokens,
    r.completionTokens, r.cachedInputTokens, r.cacheWriteTokens, r.reasoningTokens, r.tokensCounted, r.latencyMs, r.ttfbMs, r.costUsd,
    r.attempts, r.deployment, r.attemptLog, r.unpriced, r.bytesIn ?? null, r.bytesOut ?? null,
  ];
  return `R\t${JSON.stringify(values)}\n`;
}

function rowOf(values: RowValues): UsageRow {
  const [entryId, at, requestId, accountId, keyId, operation, model, providerId, status, errorKind, stream, promptTokens, completionTokens,
    cachedInputTokens, cacheWriteTokens, reasoningTokens, tokensCounted, latencyMs, ttfbMs, costUsd, attempts, deployment, attemptLog, unpriced, bytesIn, bytesOut] = values;
  return {
    entryId, at, requestId, accountId, keyId, operation, model, providerId, status, errorKind, stream, promptTokens, completionTokens,
    // A journal written before routing has no attempt fields.
    cachedInputTokens, cacheWriteTokens, reasoningTokens, tokensCounted, latencyMs, ttfbMs, costUsd, attempts: attempts ?? 1, deployment: deployment ?? null,
    attemptLog: attemptLog ?? null,
    unpriced: unpriced ?? false,
    bytesIn: bytesIn ?? null,
    bytesOut: bytesOut ?? null,
  };
}

function isRunning(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

function newJournalPath(dir: string): string {
  return join(dir, `journal-${process.pid}-${randomBytes(6).toString('hex')}.jsonl`);
}
