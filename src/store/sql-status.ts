import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { DailyStatusRow, ProbeResult, StatusRepository } from './store.js';

const DAY_MS = 86_400_000;

/** Probe results and the daily rollup behind the status page's uptime history. */
export class SqlStatus implements StatusRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async recordProbe(result: ProbeResult): Promise<void> {
    await this.db
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

  async rollup(fromDay: number, toDay: number): Promise<void> {
    const from = fromDay * DAY_MS;
    const to = (toDay + 1) * DAY_MS;
    // Plain SQL that SQLite and PostgreSQL both read: integer division gives the UTC day, and
    // the upsert recomputes whole days so it can run any number of times, in any process.
    // The failure rule mirrors isFailureStatus in store.ts.
    await this.db.transaction().execute(async (tx) => {
      await sql`
        INSERT INTO status_daily (day, provider_id, model, requests, failures)
        SELECT CAST(at / ${DAY_MS} AS INTEGER) AS d, provider_id, model, COUNT(*),
               SUM(CASE WHEN status >= 500 OR status = 429 THEN 1 ELSE 0 END)
        FROM usage_ledger
        WHERE at >= ${from} AND at < ${to} AND provider_id IS NOT NULL
        GROUP BY d, provider_id, model
        ON CONFLICT (day, provider_id, model) DO UPDATE SET requests = excluded.requests, failures = excluded.failures
      `.execute(tx);
      await sql`
        INSERT INTO status_daily (day, provider_id, model, probes, probe_failures)
        SELECT CAST(at / ${DAY_MS} AS INTEGER) AS d, provider_id, model, COUNT(*), SUM(CASE WHEN ok = 1 THEN 0 ELSE 1 END)
        FROM status_probes
        WHERE at >= ${from} AND at < ${to}
        GROUP BY d, provider_id, model
        ON CONFLICT (day, provider_id, model) DO UPDATE SET probes = excluded.probes, probe_failures = excluded.probe_failures
      `.execute(tx);
    });
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
