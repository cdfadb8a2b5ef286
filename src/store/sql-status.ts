import { sql, type Kysely } from './kysely.js';
import type { Database } from './schema.js';
import type { DailyStatusRow, ProbeResult, StatusRepository } from './store.js';
import { compareText } from './text-order.js';

export const DAY_MS = 86_400_000;

export function dayOf(at: number): number {
  return Math.floor(at / DAY_MS);
}

/**
 * Adds to the per-day counters behind the uptime history, inside the caller's transaction: the
 * ledger and the probes count as they write, so nothing ever rescans the ledger (a scan of a
 * busy day held the event loop for tens of milliseconds).
 */
export async function addToDailyStatus(db: Kysely<Database>, increments: readonly DailyStatusRow[]): Promise<void> {
  // Always in one order, so that two processes adding to the same rows (PostgreSQL replicas, each
  // locking the rows it upserts until it commits) wait for each other instead of deadlocking.
  const ordered = [...increments].sort((a, b) => a.day - b.day || compareText(a.providerId, b.providerId) || compareText(a.model, b.model));
  for (const i of ordered) {
    await db
      .insertInto('status_daily')
      .values({ day: i.day, provider_id: i.providerId, model: i.model, requests: i.requests, failures: i.failures, probes: i.probes, probe_failures: i.probeFailures })
      .onConflict((oc) =>
        oc.columns(['day', 'provider_id', 'model']).doUpdateSet({
          requests: sql`status_daily.requests + excluded.requests`,
          failures: sql`status_daily.failures + excluded.failures`,
          probes: sql`status_daily.probes + excluded.probes`,
          probe_failures: sql`status_daily.probe_failures + excluded.probe_failures`,
        }),
      )
      .execute();
  }
}

/** Probe results and the daily counters behind the status page's uptime history. */
export class SqlStatus implements StatusRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async recordProbe(result: ProbeResult): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('status_probes')
        .values({
          at: result.at,
          provider_id: result.providerId,
          model: result.model,
          ok: result.ok ? 1 : 0,
          latency_ms: result.latencyMs,
          error_kind: result.errorKind,
        })
        .execute();
      await addToDailyStatus(tx, [
        { day: dayOf(result.at), providerId: result.providerId, model: result.model, requests: 0, failures: 0, probes: 1, probeFailures: result.ok ? 0 : 1 },
      ]);
    });
  }

  async probes(since: number): Promise<ProbeResult[]> {
    const rows = await this.db.selectFrom('status_probes').selectAll().where('at', '>=', since).orderBy('at', 'desc').execute();
    return rows.map((row) => ({
      at: Number(row.at),
      providerId: row.provider_id,
      model: row.model,
      ok: row.ok === 1,
      latencyMs: row.latency_ms,
      errorKind: row.error_kind,
    }));
  }

  async daily(sinceDay: number): Promise<DailyStatusRow[]> {
    const rows = await this.db.selectFrom('status_daily').selectAll().where('day', '>=', sinceDay).orderBy('day').execute();
    return rows.map((row) => ({
      day: Number(row.day),
      providerId: row.provider_id,
      model: row.model,
      requests: Number(row.requests),
      failures: Number(row.failures),
      probes: Number(row.probes),
      probeFailures: Number(row.probe_failures),
    }));
  }

  async claimProbe(providerId: string, now: number, intervalMs: number): Promise<boolean> {
    const name = `probe:${providerId}`;
    await this.db.insertInto('meta').values({ name, value: 0 }).onConflict((oc) => oc.column('name').doNothing()).execute();
    const result = await this.db
      .updateTable('meta')
      .set({ value: now })
      .where('name', '=', name)
      .where('value', '<=', now - intervalMs)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }
}
